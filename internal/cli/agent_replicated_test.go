package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

func TestAgentReplicatedRejectsBadFlags(t *testing.T) {
	t.Parallel()
	ok := []string{"--target", "http://r", "--listen", "127.0.0.1:0", "--register", "http://a", "--group", "g", "--data-dir", "/tmp/x"}
	with := func(flag, value string) []string {
		args := append([]string(nil), ok...)
		for i := 0; i < len(args); i += 2 {
			if args[i] == flag {
				if value == "" {
					return append(args[:i:i], args[i+2:]...)
				}
				args[i+1] = value
				return args
			}
		}
		return append(args, flag, value)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{with("--target", ""), "--target is required"},
		{with("--listen", ""), "--listen is required"},
		{with("--register", ""), "--register is required"},
		{with("--group", ""), "--group is required"},
		{with("--data-dir", ""), "--data-dir is required"},
		{with("--target", "localhost:80"), `--target "localhost:80": must be an absolute`},
		{with("--advertise", "agent:9101"), `--advertise "agent:9101": must be an absolute`},
		{with("--register", "http://a,"), "is empty"},
		{with("--max-payload", "12"), "--max-payload 12: must be in [1KiB, 1GiB]"},
		{with("--max-payload", "lots"), `invalid size "lots"`},
		{with("--wait", "0s"), "--wait 0s: must be > 0"},
		{append(with("--target", "http://127.0.0.1:1/Counter"), "--giop"), `--target: giopdeliver: target "http://127.0.0.1:1/Counter"`},
		{with("--giop-listen", "127.0.0.1:0"), "--giop-listen and --outcall-target need --giop"},
		{append(with("--giop-listen", "127.0.0.1:0"), "--giop"), "--giop-listen and --outcall-target go together"},
		{append(with("--outcall-target", "corbaloc:iiop:1.2@127.0.0.1:1/Counter"), "--giop"), "--giop-listen and --outcall-target go together"},
		{append(with("--giop-listen", ":0"), "--giop", "--outcall-target", "corbaloc:iiop:1.2@127.0.0.1:1/Counter"), `--giop-listen ":0": must name the host`},
		{append(with("--giop-listen", "0.0.0.0:4100"), "--giop", "--outcall-target", "corbaloc:iiop:1.2@127.0.0.1:1/Counter"), `--giop-listen "0.0.0.0:4100": must name the host`},
		{append(with("--giop-listen", "4100"), "--giop", "--outcall-target", "corbaloc:iiop:1.2@127.0.0.1:1/Counter"), `--giop-listen "4100": address 4100: missing port`},
		{append(with("--giop-listen", "127.0.0.1:0"), "--giop", "--outcall-target", "http://callee/"), `--outcall-target "http://callee/": ior: reference must start`},
	} {
		_, errOut, code := runCtl(t, "", append([]string{"agent", "replicated"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("agent replicated %s: exit %d, %q; want exit 2 mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestAgentReplicatedHelp(t *testing.T) {
	t.Parallel()
	out, _, code := runCtl(t, "", "agent", "replicated", "--help")
	for _, want := range []string{"--data-dir", "--max-payload", "/fulcrum/replication/checkpoint", "one at a time", "must be reset", "agent.db", "--giop-listen", "--outcall-target", "giop outcalls at"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

// TestAgentReplicatedRegistersItsListenAddress runs "fulcrum agent
// replicated" beside a real counter against a real balancer: the replica
// is registered with the agent's --listen address, the agent passes
// calls there on to the counter, and it deregisters when it stops. The
// group is per-request, with no log to stream: the agent keeps retrying
// its stream and still serves its listener
// (TestAgentReplicatedEndToEnd runs it in a replicated group).
func TestAgentReplicatedRegistersItsListenAddress(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	mustCtl(t, admin, "create", "web", "--front-door", "127.0.0.1:0", "--binding", "per-request", "--report-interval", "50ms")
	counter := &backend.Counter{}
	server := httptest.NewServer(backend.NewCounterHandler(counter, backend.CounterOptions{}))
	defer server.Close()
	if _, err := counter.Add(5, backend.Stamp{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot()
	out := &syncBuffer{}
	var errOut bytes.Buffer
	root.SetOut(out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"agent", "replicated", "--target", server.URL, "--listen", "127.0.0.1:0", "--register", admin,
		"--group", "web", "--data-dir", t.TempDir()})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	events, unsubscribe, err := b.Subscribe("web")
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	wait, stopWait := context.WithTimeout(ctx, 15*time.Second)
	defer stopWait()
	var address string
	for address == "" {
		st, err := b.Group("web")
		if err != nil {
			t.Fatal(err)
		}
		// A pushed report means the agent has its registration (and
		// will take it back when it stops).
		if len(st.Replicas) == 1 && st.Replicas[0].ReportAgeMS != nil {
			address = st.Replicas[0].Address
			break
		}
		select {
		case err := <-done:
			t.Fatalf("agent exited early: %v\n%s", err, errOut.String())
		case _, ok := <-events:
			if !ok {
				t.Fatal("group web went away")
			}
		case <-wait.Done():
			t.Fatalf("no replica registered within 15s")
		}
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "listening on "+address {
		t.Fatalf("registered address %q, first line %q: want the agent's listen URL", address, first)
	}
	resp, err := http.Get(address + "/value")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"value":5`) {
		t.Fatalf("GET /value at the registered address: %d %s, want the counter's value 5", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("agent: %v\n%s", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop within 10s of its context ending")
	}
	st, _ := b.Group("web")
	if len(st.Replicas) == 1 && st.Replicas[0].State != "draining" {
		t.Errorf("replica %s after the agent stopped, want draining or gone\n%s", st.Replicas[0].State, errOut.String())
	}
}
