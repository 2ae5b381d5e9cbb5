package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
)

// stallingReplica is a replica reached through fd whose answers stall:
// with headerFirst it sends the status line and headers, then stalls the
// body; otherwise it stalls before answering. Stalls end at the test's end.
func stallingReplica(t *testing.T, headerFirst bool) (frontDoor string) {
	t.Helper()
	release := make(chan struct{})
	r := newFakeReplica(t, "r1", "")
	r.wrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path == "/fast" {
				next.ServeHTTP(w, req)
				return
			}
			if headerFirst {
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, "part")
				http.NewResponseController(w).Flush()
			}
			select {
			case <-release:
			case <-req.Context().Done():
			}
		})
	})
	fd := newFakeFrontDoor(t, r)
	t.Cleanup(func() { close(release) })
	return fd.srv.URL
}

func TestTimeoutBoundsACallThatGetsNoAnswer(t *testing.T) {
	t.Parallel()
	door := stallingReplica(t, false)
	tr := newTransport(client.Options{Timeout: 200 * time.Millisecond})
	defer tr.CloseIdleConnections()

	// A call within the timeout binds and is answered.
	if code, body := do(t, tr, http.MethodGet, door+"/fast", nil); code != http.StatusOK || body != "r1:" {
		t.Fatalf("fast call: %d %q, want 200 from r1", code, body)
	}
	began := time.Now()
	_, _, err := tryDo(tr, http.MethodGet, door+"/stall", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled call: err %v, want the timeout's deadline exceeded", err)
	}
	// tryDo's own bound is 10 s: the Transport's timeout must have ended it.
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("stalled call ended after %v, want about the 200ms timeout", d)
	}
}

func TestTimeoutCoversReadingTheBody(t *testing.T) {
	t.Parallel()
	door := stallingReplica(t, true)
	tr := newTransport(client.Options{Timeout: 200 * time.Millisecond})
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, door+"/stall", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("the headers came within the timeout, yet: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if string(data) != "part" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("body %q, err %v; want \"part\" then the timeout's deadline exceeded", data, err)
	}
}

func TestTimeoutEndsWhenTheBodyIsRead(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{Timeout: time.Minute})
	defer tr.CloseIdleConnections()
	for range 3 { // bound, then straight to the replica
		req, err := http.NewRequest(http.MethodGet, fd.srv.URL+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		if err != nil || string(data) != "r1:" {
			t.Fatalf("body %q, err %v; want r1:", data, err)
		}
		// Read to the end: the call's context is over, so a
		// further read says EOF, not a cancellation.
		if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("read after the end: %d, %v; want 0, EOF", n, err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(r1.ran()); got != 3 {
		t.Fatalf("r1 ran %d calls, want 3", got)
	}
}

// goroutinesCreated is how many goroutines the process has created.
func goroutinesCreated(t *testing.T) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("runtime/metrics has no %s", s[0].Name)
	}
	return s[0].Value.Uint64()
}

// Not parallel: it counts the goroutines the whole process creates.
func TestTimeoutStartsNoGoroutinePerCall(t *testing.T) {
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{Timeout: time.Minute})
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	call := func() {
		resp, err := hc.Get(fd.srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	call() // binds and connects
	const n = 200
	before := goroutinesCreated(t)
	for range n {
		call()
	}
	got := goroutinesCreated(t) - before
	// The in-process replica's net/http server starts one goroutine per
	// request (its background read); the calls must start none of their
	// own. http.Client.Timeout would start two per call.
	if got > n+n/2 {
		t.Fatalf("%d bound calls with Options.Timeout created %d goroutines, want about %d (the server's)", n, got, n)
	}
	if len(r1.ran()) != n+1 {
		t.Fatalf("replica ran %d calls, want %d", len(r1.ran()), n+1)
	}
}
