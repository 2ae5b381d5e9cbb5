//go:build linux

package e2e

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// fulcrum demo reaches equilibrium and exits 0; the non-adaptive set-up
// runs for its duration and exits 0. Each demo's replicas are its children,
// in its process group: the cleanup fails the test if one outlives it.
func TestDemo(t *testing.T) {
	t.Parallel()
	t.Run("on-demand least-loaded", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 100*time.Second)
		start := time.Now()
		code, stdout, stderr := run(ctx, t, "fulcrum demo", "demo", "--duration", "60s")
		t.Logf("fulcrum demo exited %d after %v", code, time.Since(start).Round(time.Millisecond))
		if code != 0 || !strings.Contains(stdout, "balanced after") {
			t.Errorf("fulcrum demo: exit status %d, want 0 and \"balanced after\"\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("kill -9 of a replica", func(t *testing.T) {
		t.Parallel()
		testDemoReplicaKill(t)
	})
	t.Run("stay until interrupted", func(t *testing.T) {
		t.Parallel()
		testDemoStay(t)
	})
	t.Run("round-robin per-session", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 60*time.Second)
		start := time.Now()
		code, stdout, stderr := run(ctx, t, "fulcrum demo", "demo", "--strategy", "round-robin", "--binding", "per-session", "--duration", "8s")
		t.Logf("fulcrum demo exited %d after %v", code, time.Since(start).Round(time.Millisecond))
		if code != 0 {
			t.Errorf("fulcrum demo --strategy round-robin --binding per-session: exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

var (
	demoReplica = regexp.MustCompile(`(?m)^replica 2: pid (\d+), (\S+)$`)
	demoRow     = regexp.MustCompile(`(?m)^\s*(\d+)((?:\s+\d+){4})\s+(\d+)\s+(\d+)$`)
)

// testDemoReplicaKill kills a replica of the demo with kill -9 once its
// clients run: its clients rebind with no failed call beyond those in
// flight (at most one per client), the demo starts it again on its
// address, and it re-registers under its id and takes load, since the demo
// reaches equilibrium (every replica, the restarted one included, within
// the band of the mean) afterwards.
func testDemoReplicaKill(t *testing.T) {
	ctx := testContext(t, 100*time.Second)
	const clients = 8 // the demo's default
	out, pid := runDemoKillingReplica(ctx, t, "fulcrum demo", "demo", "--duration", "60s")
	failed := 0
	for _, row := range demoRow.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(row[3])
		failed += n
	}
	if failed > clients {
		t.Errorf("%d failed calls after kill -9 of a replica, want at most %d (one in flight per client):\n%s", failed, clients, out)
	}
	t.Logf("replica 2 (pid %d) killed; %d failed calls; %s", pid, failed, out[strings.LastIndex(out, "balanced after"):])
}

// runDemoKillingReplica runs the demo (fulcrum args, name for messages),
// kills its replica 2 with kill -9 once the third second's row is printed,
// waits for the demo to start it again on its address, and returns the
// demo's stdout and the killed pid once it has exited 0 after "balanced
// after".
func runDemoKillingReplica(ctx context.Context, t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	p := startProc(t, name, args...)
	p.WaitOutput(ctx, t, p.Stdout, regexp.MustCompile(`(?m)^\s+3\s`)) // the third second's row
	m := demoReplica.FindStringSubmatch(p.Stdout.String())
	if m == nil {
		t.Fatalf("the demo did not print replica 2's pid:\n%s", p.Stdout)
	}
	pid, _ := strconv.Atoi(m[1])
	addr := m[2]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 of replica 2 (pid %d): %v", pid, err)
	}
	restarted := regexp.MustCompile(`(?m)^replica 2: pid (\d+), ` + regexp.QuoteMeta(addr) + `$`)
	proctest.Poll(ctx, t, "the demo restarting replica 2 on "+addr, func() (bool, string) {
		for _, m := range restarted.FindAllStringSubmatch(p.Stdout.String(), -1) {
			if m[1] != strconv.Itoa(pid) {
				return true, ""
			}
		}
		return false, p.Stdout.String()
	})
	code := p.Exit(ctx, t)
	out := p.Stdout.String()
	if code != 0 || !strings.Contains(out, "balanced after") {
		t.Fatalf("%s with a replica killed: exit status %d, want 0 and \"balanced after\"\n%s", name, code, out)
	}
	return out, pid
}

// The command line's help works.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage:", "serve", "backend", "demo", "ctl", "version"}},
		{[]string{"serve", "--help"}, []string{"Usage:", "--config", "--insecure", "--admin", "--data-dir"}},
		{[]string{"ctl", "--help"}, []string{"Usage:", "--admin", "--token"}},
		{[]string{"backend", "prime", "--help"}, []string{"Usage:", "--listen", "--register", "--group"}},
		{[]string{"demo", "--help"}, []string{"Usage:", "--replicas", "--rates", "--strategy", "--binding", "--duration", "--stay"}},
		{[]string{"version"}, []string{"fulcrum "}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 30*time.Second)
			code, stdout, stderr := run(ctx, t, "fulcrum", tc.args...)
			if code != 0 {
				t.Errorf("fulcrum %s: exit status %d, want 0; stderr:\n%s", strings.Join(tc.args, " "), code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("fulcrum %s: stdout lacks %q:\n%s", strings.Join(tc.args, " "), w, stdout)
				}
			}
		})
	}
}

// testDemoStay runs the demo with --stay: once its result is printed it
// goes on printing rows with the dashboard served, until SIGINT ends it
// with the result's exit status.
func testDemoStay(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	p := startProc(t, "fulcrum demo --stay", "demo", "--strategy", "round-robin", "--binding", "per-session", "--duration", "2s", "--stay")
	m := p.WaitOutput(ctx, t, p.Stdout, regexp.MustCompile(`(?m)^dashboard: (\S+) `))
	// A row printed after the staying line: the demo still runs.
	p.WaitOutput(ctx, t, p.Stdout, regexp.MustCompile(`(?m)^staying up until interrupted.*\n(?:.*\n)*?\s*\d+(?:\s+\d+){6}\n`))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s while the demo stays: %v", m[1], err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s while the demo stays: %s, want 200 OK", m[1], resp.Status)
	}
	p.Signal(t, syscall.SIGINT)
	if code := p.Exit(ctx, t); code != 0 {
		t.Fatalf("fulcrum demo --stay after SIGINT: exit status %d, want 0 (the result's)\n%s\n%s", code, p.Stdout, p.Stderr)
	}
	if out := p.Stdout.String(); !strings.Contains(out, "ran for 2s with round-robin/per-session") {
		t.Fatalf("fulcrum demo --stay did not print its result:\n%s", out)
	}
}
