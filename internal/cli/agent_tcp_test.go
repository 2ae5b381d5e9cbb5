package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
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

// TestAgentTCPRegistersReportsAndDeregisters runs "fulcrum agent tcp"
// beside a real TCP replica of this process against a real balancer: the
// agent registers the replica's HOST:PORT in a tcp group, its pushed
// reports carry the replica's CPU and, as inflight (the load), the client
// connections proxied to it, and it deregisters when it stops.
func TestAgentTCPRegistersReportsAndDeregisters(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	replica, _ := tcpReplica(t)
	door := tcpGroup(t, b, "echo")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"agent", "tcp", "--target", replica, "--register", admin, "--group", "echo",
		"--pid", strconv.Itoa(os.Getpid()), "--load", "connections", "--sample", "20ms"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	events, unsubscribe, err := b.Subscribe("echo")
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	wait := boundedCtx(t, 15*time.Second)
	// until returns the group's only replica once cond holds, looking
	// again at each of the group's events (it steps every report
	// interval).
	until := func(what string, cond func(protocol.ReplicaStatus) bool) protocol.ReplicaStatus {
		t.Helper()
		for {
			st, err := b.Group("echo")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Replicas) == 1 && cond(st.Replicas[0]) {
				return st.Replicas[0]
			}
			select {
			case err := <-done:
				t.Fatalf("agent exited early: %v\n%s", err, errOut.String())
			case _, ok := <-events:
				if !ok {
					t.Fatal("group echo went away")
				}
			case <-wait.Done():
				t.Fatalf("no replica %s within 15s: %+v\n%s", what, st.Replicas, errOut.String())
			}
		}
	}
	r := until("registered", func(r protocol.ReplicaStatus) bool { return r.State == protocol.StateActive })
	if r.Address != replica {
		t.Fatalf("registered address %s, want %s", r.Address, replica)
	}
	for _, line := range []string{"a\n", "b\n", "c\n"} {
		echoThrough(t, door, line)
	}
	r = until("reporting 3 connections and its CPU", func(r protocol.ReplicaStatus) bool {
		_, cpu := r.Metrics[protocol.MetricCPU]
		return cpu && r.Metrics[protocol.MetricInflight] == 3 && r.Load != nil && *r.Load == 3
	})
	if r.Monitor != protocol.MonitorPush {
		t.Errorf("monitor %q, want push", r.Monitor)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("agent: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop within 10s of its context ending")
	}
	st, _ := b.Group("echo")
	if len(st.Replicas) == 1 && st.Replicas[0].State != protocol.StateDraining {
		t.Errorf("replica %s after the agent stopped, want draining or gone", st.Replicas[0].State)
	}
}
