//go:build linux

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reloadAnswer is the body of POST /v1/reload, or of its error.
type reloadAnswer struct {
	Added           []string `json:"added"`
	Changed         []string `json:"changed"`
	Removed         []string `json:"removed"`
	RestartRequired []string `json:"restart_required"`
	Error           struct {
		Code   string   `json:"code"`
		Errors []string `json:"errors"`
	} `json:"error"`
}

// groupNames lists the balancer's groups.
func groupNames(t *testing.T, hc *http.Client, admin string) []string {
	t.Helper()
	var list struct {
		Groups []groupStatus `json:"groups"`
	}
	mustCall(testContext(t, 10*time.Second), t, hc, "GET", admin+"/v1/groups", nil, http.StatusOK, &list)
	var names []string
	for _, g := range list.Groups {
		names = append(names, g.Name)
	}
	return names
}

// SIGHUP re-reads the config file of a running fulcrum serve, which goes
// on serving: a group added, one removed. A file that cannot be used
// changes nothing, by SIGHUP or POST /v1/reload, which returns every
// problem.
func TestReloadSIGHUP(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	cfg := writeConfig(t, "admin: 127.0.0.1:0\ndata_dir: %s\ngroups:\n  - name: a\n    front_door: 127.0.0.1:0\n  - name: b\n    front_door: 127.0.0.1:0\n", data)
	bal := startServe(t, "--config", cfg)
	hc := apiClient(t)
	if got := groupNames(t, hc, bal.admin); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("groups at start: %v", got)
	}

	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("admin: 127.0.0.1:0\ndata_dir: " + data + "\ngroups:\n  - name: a\n    front_door: 127.0.0.1:0\n  - name: c\n    front_door: 127.0.0.1:0\n")
	bal.Signal(t, syscall.SIGHUP)
	ctx := testContext(t, 20*time.Second)
	bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`msg="config file reloaded" .*added=\[c\] changed=\[\] removed=\[b\]`))
	if got := groupNames(t, hc, bal.admin); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("groups after SIGHUP: %v, want a and c", got)
	}

	// A file with two problems: SIGHUP logs them and changes nothing.
	write("admin: 127.0.0.1:0\ndata_dir: " + data + "\nlog_level: loud\ngroups:\n  - name: a\n    front_door: 127.0.0.1:0\n    binding: sometimes\n")
	bal.Signal(t, syscall.SIGHUP)
	bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`config file refused; nothing changed" problem=".*:7: groups\[0\]\.binding`))
	var ans reloadAnswer
	mustCall(ctx, t, hc, "POST", bal.admin+"/v1/reload", nil, http.StatusBadRequest, &ans)
	want := []string{
		cfg + `:3: log_level: invalid value "loud", must be one of: debug, info, warn, error`,
		cfg + `:7: groups[0].binding: invalid value "sometimes", must be one of: per-session, on-demand, per-request, replicated`,
	}
	if ans.Error.Code != "invalid_config" || !slices.Equal(ans.Error.Errors, want) {
		t.Errorf("POST /v1/reload of a bad file: %+v, want invalid_config with\n%s", ans.Error, strings.Join(want, "\n"))
	}
	if got := groupNames(t, hc, bal.admin); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("groups after a refused reload: %v, want a and c", got)
	}

	// POST /v1/reload of a good file answers what changed.
	write("admin: 127.0.0.1:0\ndata_dir: " + data + "\ngroups:\n  - name: c\n    front_door: 127.0.0.1:0\n    strategy: round-robin\n")
	ans = reloadAnswer{}
	mustCall(ctx, t, hc, "POST", bal.admin+"/v1/reload", nil, http.StatusOK, &ans)
	if !slices.Equal(ans.Added, []string{}) || !slices.Equal(ans.Changed, []string{"c"}) || !slices.Equal(ans.Removed, []string{"a"}) || ans.RestartRequired == nil {
		t.Errorf("POST /v1/reload: %+v, want c changed and a removed", ans)
	}

	select {
	case <-bal.Done():
		t.Fatalf("fulcrum serve exited after SIGHUP: %v\n%s", bal.Err(), bal.Stderr.String())
	default:
	}
	bal.Signal(t, syscall.SIGTERM)
	if code := bal.Exit(ctx, t); code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
}

// Without --config there is nothing to reload: POST /v1/reload answers
// 409 and SIGHUP is logged, not fatal.
func TestReloadWithoutConfig(t *testing.T) {
	t.Parallel()
	bal := startServe(t, "--admin", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"))
	ctx := testContext(t, 20*time.Second)
	hc := apiClient(t)
	var ans reloadAnswer
	mustCall(ctx, t, hc, "POST", bal.admin+"/v1/reload", nil, http.StatusConflict, &ans)
	if ans.Error.Code != "no_config_file" {
		t.Errorf("POST /v1/reload without --config: code %q, want no_config_file", ans.Error.Code)
	}
	bal.Signal(t, syscall.SIGHUP)
	bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`SIGHUP: started without --config`))
	mustCall(ctx, t, hc, "GET", bal.admin+"/v1/groups", nil, http.StatusOK, nil)
	bal.Signal(t, syscall.SIGTERM)
	if code := bal.Exit(ctx, t); code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
}

// fulcrum serve --check prints every problem of a file in line order and
// exits 2, or prints ok and exits 0; it opens no store and binds nothing
// (the addresses it checks are taken by the test).
func TestServeCheck(t *testing.T) {
	t.Parallel()
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	door, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer door.Close()
	data := filepath.Join(t.TempDir(), "data")
	head := "admin: " + admin.Addr().String() + "\ndata_dir: " + data + "\n"

	good := writeConfig(t, "%sgroups:\n  - name: a\n    front_door: %s\n", head, door.Addr())
	ctx := testContext(t, 30*time.Second)
	code, stdout, stderr := run(ctx, t, "fulcrum serve --check", "serve", "--check", "--config", good)
	if code != 0 || stdout != good+": ok\n" || stderr != "" {
		t.Errorf("--check of a good file: exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, good+": ok\n")
	}

	bad := writeConfig(t, "%sshutdown_timeout: 2h\ncolour: blue\ngroups:\n  - name: a\n    front_door: %s\n    max_inflight: lots\n  - name: b\n    front_door: %s\n    binding: sometimes\n",
		head, door.Addr(), door.Addr())
	code, stdout, stderr = run(ctx, t, "fulcrum serve --check", "serve", "--check", "--config", bad)
	want := []string{
		bad + `:3: shutdown_timeout: invalid value "2h", must be a duration in [0s, 1h]`,
		bad + `:4: colour: unknown key, allowed keys: `,
		bad + `:8: groups[0].max_inflight: invalid value "lots", must be an integer`,
		bad + `:10: groups[1].front_door: invalid value "` + door.Addr().String() + `", must not be an address another listener uses (groups[0] listens on ` + door.Addr().String() + `)`,
		bad + `:11: groups[1].binding: invalid value "sometimes", must be one of: per-session, on-demand, per-request, replicated`,
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 2 || stdout != "" || len(lines) != len(want) {
		t.Fatalf("--check of a bad file: exit %d, stdout %q, stderr:\n%s\nwant 2 and %d lines", code, stdout, stderr, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got %s\nwant %s...", i+1, lines[i], w)
		}
	}

	// The files the config names are read too: a CA that is not there.
	ca := filepath.Join(t.TempDir(), "missing-ca.pem")
	noCA := writeConfig(t, "%sgroups:\n  - name: a\n    front_door: %s\n    replica_tls:\n      ca: %s\n", head, door.Addr(), ca)
	code, _, stderr = run(ctx, t, "fulcrum serve --check", "serve", "--check", "--config", noCA)
	if want := noCA + `:7: groups[0].replica_tls.ca: invalid value "` + ca + `"`; code != 2 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--check of a file naming a missing CA: exit %d, stderr:\n%s\nwant 2 and one line starting %s", code, stderr, want)
	}

	// The normal start reports the same lines, and exits 2.
	code, _, stderr = run(ctx, t, "fulcrum serve", "serve", "--config", bad)
	if code != 2 || strings.Count(stderr, "\n") != len(want) || !strings.HasPrefix(stderr, want[0]) {
		t.Errorf("serve with a bad file: exit %d, stderr:\n%s\nwant 2 and the %d lines of --check", code, stderr, len(want))
	}
	if _, err := os.Stat(data); err == nil {
		t.Errorf("the data dir was created")
	}
}

// SIGHUP under wrk's load through a real fulcrum serve: reloads add a
// group, change one and remove one while wrk calls an untouched group,
// and not one of wrk's calls fails.
func TestReloadUnderWrkLoad(t *testing.T) {
	t.Parallel()
	wrk := needTool(t, "wrk")
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)
	_, r1 := startPrime(t, "--listen", "127.0.0.1:0")
	_, r2 := startPrime(t, "--listen", "127.0.0.1:0")
	data := filepath.Join(t.TempDir(), "data")
	const head = "admin: 127.0.0.1:0\ndata_dir: %s\ngroups:\n" +
		"  - name: keep\n    front_door: 127.0.0.1:0\n    binding: per-request\n    replicas: [{address: %s}, {address: %s}]\n"
	const change = "  - name: change\n    front_door: 127.0.0.1:0\n    binding: per-request\n    strategy: %s\n    replicas: [{address: %s}]\n"
	const gone = "  - name: gone\n    front_door: 127.0.0.1:0\n    replicas: [{address: %s}]\n"
	const added = "  - name: added\n    front_door: 127.0.0.1:0\n    replicas: [{address: %s}]\n"
	cfg := writeConfig(t, head+change+gone, data, r1, r2, "round-robin", r1, r2)
	bal := startServe(t, "--config", cfg)
	keep, err := getGroup(ctx, hc, bal.admin, "keep")
	if err != nil {
		t.Fatal(err)
	}
	proxied := func() uint64 {
		t.Helper()
		g, err := getGroup(ctx, hc, bal.admin, "keep")
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, r := range g.Replicas {
			n += r.Counters.Proxied
		}
		return n
	}

	type wrkRun struct {
		out string
		err error
	}
	done := make(chan wrkRun, 1)
	go func() {
		cmd := exec.CommandContext(ctx, wrk, "-t2", "-c8", "-d4s", "--timeout", "5s", keep.Advertise+"/prime/1000003")
		out, err := cmd.CombinedOutput()
		done <- wrkRun{string(out), err}
	}()
	// wrk is calling once the balancer has proxied some of its calls.
	for proxied() < 50 {
		select {
		case r := <-done:
			t.Fatalf("wrk ended before the reloads: %v\n%s", r.err, r.out)
		case <-ctx.Done():
			t.Fatal("wrk's calls did not reach the balancer")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, step := range []struct {
		file string
		log  string
	}{
		{fmt.Sprintf(head+change+added, data, r1, r2, "random", r1, r2), `added=\[added\] changed=\[change\] removed=\[gone\]`},
		{fmt.Sprintf(head+change+added+gone, data, r1, r2, "round-robin", r1, r2, r2), `added=\[gone\] changed=\[change\] removed=\[\]`},
		{fmt.Sprintf(head+change, data, r1, r2, "random", r1), `added=\[\] changed=\[change\] removed="\[added gone\]"`},
	} {
		if err := os.WriteFile(cfg, []byte(step.file), 0o600); err != nil {
			t.Fatal(err)
		}
		bal.Signal(t, syscall.SIGHUP)
		bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`msg="config file reloaded" .*`+step.log))
	}
	afterReloads := proxied()
	r := <-done
	if r.err != nil {
		t.Fatalf("wrk: %v\n%s", r.err, r.out)
	}
	res := parseWrk(t, r.out)
	t.Logf("wrk during 3 reloads: %d requests; socket errors connect %d read %d write %d timeout %d; non-2xx %d",
		res.requests, res.connect, res.read, res.write, res.timeout, res.non2x)
	if res.connect+res.read+res.write+res.timeout+res.non2x != 0 {
		t.Errorf("wrk saw errors on the untouched group during the reloads:\n%s", r.out)
	}
	if end := proxied(); end <= afterReloads {
		t.Errorf("no call after the reloads (%d proxied then, %d at the end): the reloads did not happen under load", afterReloads, end)
	}
}
