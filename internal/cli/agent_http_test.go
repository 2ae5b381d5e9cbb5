package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestAgentHTTPRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--target is required"},
		{[]string{"--target", "localhost:80", "--register", "http://a", "--group", "g"}, `--target "localhost:80": must be an absolute`},
		{[]string{"--target", "http://r"}, "--register ADMIN_URL (with --group) or --token is required"},
		{[]string{"--target", "http://r", "--register", "http://a"}, "--group is required"},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g"}, "--load cpu needs --pid or --cgroup"},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--load", "rate", "--pid", "1"}, "--load rate needs --stub-status"},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--load", "memory", "--pid", "1"}, `--load "memory": must be rate, connections or cpu`},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--pid", "1", "--cgroup", "no-such-cgroup-here"}, `--cgroup: cgroup "no-such-cgroup-here"`},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--pid", "-3"}, "--pid -3: must be a process id"},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--pid", "1", "--mode", "pull"}, "--mode pull needs --listen"},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--pid", "1", "--mode", "poll"}, `--mode "poll": must be push or pull`},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--pid", "1", "--sample", "0s"}, "--sample 0s: must be in [1ms, 1m]"},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--stub-status", "nginx_status"}, `--stub-status "nginx_status"`},
		{[]string{"--target", "http://r", "--register", "http://a", "--group", "g", "--cgroup", "no-such-cgroup-here"}, "--cgroup: cgroup \"no-such-cgroup-here\": no cpuacct.usage or cpu.stat"},
	} {
		_, errOut, code := runCtl(t, "", append([]string{"agent", "http"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("agent http %s: exit %d, %q; want exit 2 mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestAgentHTTPHelp(t *testing.T) {
	t.Parallel()
	out, _, code := runCtl(t, "", "agent", "http", "--help")
	for _, want := range []string{"--stub-status", "--pid", "--cgroup", "--mode", "/fulcrum/probe"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

// TestAgentHTTPRegistersReportsAndDeregisters runs "fulcrum agent http"
// in pull mode beside a replica that has no monitor (an HTTP server of
// this test, whose CPU is this process's) against a real balancer: the
// replica is registered with the given address, the balancer pulls the
// agent's reports, and the agent deregisters when it stops. Where this
// process's cgroup is visible it is given too (--cgroup beside --pid),
// and the reports carry cpu_other.
func TestAgentHTTPRegistersReportsAndDeregisters(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	mustCtl(t, admin, "create", "web", "--front-door", "127.0.0.1:0", "--binding", "per-request", "--report-interval", "50ms")
	replica := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }))
	defer replica.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	args := []string{"agent", "http", "--target", replica.URL, "--register", admin, "--group", "web",
		"--pid", strconv.Itoa(os.Getpid()), "--mode", "pull", "--listen", "127.0.0.1:0", "--sample", "20ms"}
	want := []string{protocol.MetricCPU}
	if acct := cgroupcpu.FindSelf().Acct; len(acct) > 0 {
		args = append(args, "--cgroup", acct[0])
		want = append(want, protocol.MetricCPUOther)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("this process's cgroup is not visible (CI=true): --cgroup beside --pid goes untested")
	}
	root.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	// Look at the group again on each of its events (it steps every
	// report interval) until a pulled report carries what is wanted.
	events, unsubscribe, err := b.Subscribe("web")
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	wait, stopWait := context.WithTimeout(ctx, 15*time.Second)
	defer stopWait()
	for {
		st, err := b.Group("web")
		if err != nil {
			t.Fatal(err)
		}
		// The first pull may come before the agent's second CPU reading
		// (no window yet); wait for one that carries cpu.
		if len(st.Replicas) == 1 && st.Replicas[0].Monitor == protocol.MonitorPull && st.Replicas[0].ReportAgeMS != nil {
			r := st.Replicas[0]
			if r.Address != replica.URL {
				t.Fatalf("address %s, want %s", r.Address, replica.URL)
			}
			if hasAll(r.Metrics, want) {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("agent exited early: %v\n%s", err, errOut.String())
		case _, ok := <-events:
			if !ok {
				t.Fatal("group web went away while waiting for a pulled report")
			}
		case <-wait.Done():
			t.Fatalf("no pulled report with %v within 15s: %+v", want, st.Replicas)
		}
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
	if !strings.HasPrefix(out.String(), "listening on http://127.0.0.1:") {
		t.Errorf("first line %q, want listening on <URL>", out.String())
	}
	st, _ := b.Group("web")
	if len(st.Replicas) == 1 && st.Replicas[0].State != "draining" {
		t.Errorf("replica %s after the agent stopped, want draining or gone", st.Replicas[0].State)
	}
}

// hasAll reports whether metrics holds every key.
func hasAll(metrics map[string]float64, keys []string) bool {
	for _, k := range keys {
		if _, ok := metrics[k]; !ok {
			return false
		}
	}
	return true
}
