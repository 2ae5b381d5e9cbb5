package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var listeningOn = regexp.MustCompile(`(?m)^listening on (\S+)$`)

// startBackendCLI runs "fulcrum backend ARGS..." in-process until the test
// ends and returns the address it prints.
func startBackendCLI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	root := NewRoot()
	var out, errOut syncBuffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"backend"}, args...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("backend %v: %v\n%s", args, err, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("backend %v did not stop within 10s of its context ending", args)
		}
	})
	var addr string
	waitCLI(t, done, &errOut, "the listening line", func() bool {
		m := listeningOn.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// "fulcrum backend counter" and "relay" over HTTP: the relay calls the
// counter and adds its answers.
func TestBackendCounterRelayHTTP(t *testing.T) {
	t.Parallel()
	counter := startBackendCLI(t, "counter", "--listen", "127.0.0.1:0")
	relay := startBackendCLI(t, "relay", "--listen", "127.0.0.1:0", "--next", counter)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for want := int64(1); want <= 3; want++ {
		if got, err := backend.CallIncrement(ctx, http.DefaultClient, counter, 1); err != nil || got != want {
			t.Fatalf("counter increment = %d, %v; want %d", got, err, want)
		}
	}
	// The relay's call makes the counter 4 and the relay 0+4.
	if got, err := backend.CallIncrement(ctx, http.DefaultClient, relay, 1); err != nil || got != 4 {
		t.Fatalf("relay increment = %d, %v; want 4", got, err)
	}
	if got, err := backend.CallIncrement(ctx, http.DefaultClient, relay, 2); err != nil || got != 4+6 {
		t.Fatalf("relay increment by 2 = %d, %v; want 10", got, err)
	}
}

// "fulcrum backend counter --dedup" applies each Idempotency-Key once.
func TestBackendCounterDedup(t *testing.T) {
	t.Parallel()
	counter := startBackendCLI(t, "counter", "--listen", "127.0.0.1:0", "--dedup")
	inc := func(key string) string {
		req, err := http.NewRequest(http.MethodPost, counter+"/increment", nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + strings.TrimSpace(string(b))
	}
	for i, tc := range []struct{ key, want string }{
		{"g/1/0", `200 OK {"value":1}`},
		{"g/1/0", `200 OK {"value":1}`},
		{"g/2/0", `200 OK {"value":2}`},
		{"", `200 OK {"value":3}`},
		{"g/1/0", `200 OK {"value":1}`},
	} {
		if got := inc(tc.key); got != tc.want {
			t.Fatalf("call %d with key %q: %s, want %s", i, tc.key, got, tc.want)
		}
	}
}

// The same over GIOP: the relay calls the counter by its IOR on the Go ORB.
func TestBackendCounterRelayGIOP(t *testing.T) {
	t.Parallel()
	counter := startBackendCLI(t, "counter", "--giop", "--listen", "127.0.0.1:0")
	relay := startBackendCLI(t, "relay", "--giop", "--listen", "127.0.0.1:0", "--next", counter)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := orb.New(orb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	client := func(ref string) backend.CounterClient {
		obj, err := o.Resolve(ref)
		if err != nil {
			t.Fatal(err)
		}
		return backend.CounterClient{Object: obj}
	}
	c, r := client(counter), client(relay)
	if got, err := c.Increment(ctx); err != nil || got != 1 {
		t.Fatalf("counter increment = %d, %v; want 1", got, err)
	}
	if got, err := r.Increment(ctx); err != nil || got != 2 {
		t.Fatalf("relay increment = %d, %v; want 2", got, err)
	}
	if got, err := c.Value(ctx); err != nil || got != 2 {
		t.Fatalf("counter value = %d, %v; want 2", got, err)
	}
}

// Bad flags exit 2 naming the flag.
func TestBackendCounterRelayFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backend", "relay", "--listen", "127.0.0.1:0"}, "--next is required"},
		{[]string{"backend", "relay", "--listen", "127.0.0.1:0", "--next", "ftp://x"}, `--next: backend: next "ftp://x": must be an http:// or https:// base URL`},
		{[]string{"backend", "relay", "--listen", "127.0.0.1:0", "--next", "http://127.0.0.1:1", "--proxy", "127.0.0.1:3128"}, `--proxy: invalid value "127.0.0.1:3128"`},
		{[]string{"backend", "relay", "--giop", "--listen", "127.0.0.1:0", "--next", "IOR:00", "--proxy", "http://127.0.0.1:1"}, "--proxy: not available with --giop"},
		{[]string{"backend", "relay", "--giop", "--listen", "127.0.0.1:0", "--next", "http://127.0.0.1:1"}, `--next: invalid value "http://127.0.0.1:1" with --giop`},
		{[]string{"backend", "counter", "--listen", "127.0.0.1:0", "--register", "http://127.0.0.1:1"}, "--group is required with --register"},
		{[]string{"backend", "counter", "--giop", "--listen", "127.0.0.1:0", "--advertise", "nohost"}, `--advertise: invalid value "nohost" with --giop`},
		{[]string{"backend", "counter", "--giop", "--listen", "127.0.0.1:0", "--dedup"}, "--dedup: not available with --giop"},
	} {
		_, errOut, code := runCtl(t, "", tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("fulcrum %s: exit %d, %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

// "fulcrum backend counter --register" joins an HTTP group with its URL,
// and increments through the group's front door reach it.
func TestBackendCounterRegisters(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	st, _, err := b.PutGroup(protocol.Group{Name: "ctr", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, ReportInterval: protocol.Duration(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	addr := startBackendCLI(t, "counter", "--listen", "127.0.0.1:0", "--register", admin, "--group", "ctr")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		g, err := b.Group("ctr")
		if err == nil && len(g.Replicas) == 1 && g.Replicas[0].Address == addr && g.Replicas[0].State == "active" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("counter %s not active in group ctr: %+v, %v", addr, g.Replicas, err)
		case <-tick.C:
		}
	}
	for want := int64(1); want <= 2; want++ {
		if got, err := backend.CallIncrement(ctx, http.DefaultClient, st.Advertise, 1); err != nil || got != want {
			t.Fatalf("increment through the front door = %d, %v; want %d", got, err, want)
		}
	}
}
