package cli

import (
	"strings"
	"testing"
)

func TestAgentTCPRejectsBadFlags(t *testing.T) {
	t.Parallel()
	base := []string{"--target", "127.0.0.1:7000", "--register", "http://a", "--group", "g"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--target is required"},
		{[]string{"--target", "http://r:80", "--pid", "1", "--register", "http://a", "--group", "g"}, `--target "http://r:80": must be HOST:PORT`},
		{[]string{"--target", "r:0", "--pid", "1", "--register", "http://a", "--group", "g"}, `--target "r:0": must be HOST:PORT with a port in [1, 65535]`},
		{[]string{"--target", "r:70000", "--pid", "1"}, "port in [1, 65535]"},
		{[]string{"--target", "r:7000", "--address", "http://r:7000", "--pid", "1"}, `--address "http://r:7000": must be HOST:PORT`},
		{[]string{"--target", "r:7000", "--register", "http://a", "--group", "g"}, "--pid PID or --cgroup DIR is required"},
		{[]string{"--target", "r:7000", "--pid", "1"}, "--register ADMIN_URL (with --group) or --token is required"},
		{[]string{"--target", "r:7000", "--pid", "1", "--register", "http://a"}, "--group is required"},
		{append([]string{"--pid", "-3"}, base...), "--pid -3: must be a process id"},
		{append([]string{"--pid", "1", "--load", "rate"}, base...), `--load "rate": must be cpu or connections`},
		{append([]string{"--pid", "1", "--mode", "pull"}, base...), "--mode pull needs --listen"},
		{append([]string{"--pid", "1", "--mode", "poll"}, base...), `--mode "poll": must be push or pull`},
		{append([]string{"--pid", "1", "--advertise", "http://x"}, base...), "--advertise needs --listen"},
		{append([]string{"--pid", "1", "--sample", "0s"}, base...), "--sample 0s: must be in [1ms, 1m]"},
		{append([]string{"--pid", "1", "--wait", "0s"}, base...), "--wait 0s: must be > 0"},
		{append([]string{"--cgroup", "no-such-cgroup-here"}, base...), `--cgroup: cgroup "no-such-cgroup-here": no cpuacct.usage or cpu.stat`},
	} {
		_, errOut, code := runCtl(t, "", append([]string{"agent", "tcp"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("agent tcp %s: exit %d, %q; want exit 2 mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestAgentTCPHelp(t *testing.T) {
	t.Parallel()
	out, _, code := runCtl(t, "", "agent", "tcp", "--help")
	for _, want := range []string{"--target", "--pid", "--cgroup", "--load", "/proc/net/tcp6", "ESTABLISHED"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}
