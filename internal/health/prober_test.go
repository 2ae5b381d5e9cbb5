package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

const waitBound = 10 * time.Second

// healthServer serves /base/healthz on a fixed address and can be stopped
// and started again on it.
type healthServer struct {
	addr   string
	status atomic.Int32
	probes atomic.Int64
	mu     sync.Mutex
	srv    *http.Server
}

func newHealthServer(t *testing.T) *healthServer {
	t.Helper()
	h := &healthServer{}
	h.status.Store(http.StatusOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	t.Cleanup(h.stop)
	return h
}

func (h *healthServer) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.probes.Add(1)
		if r.URL.Path != "/base/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(h.status.Load()))
	})}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (h *healthServer) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = h.srv.Close()
}

func (h *healthServer) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", h.addr, err)
	}
	h.serve(ln)
}

func (h *healthServer) url() string { return "http://" + h.addr + "/base/" }

type change struct{ id, state string }

func expectChange(t *testing.T, ch <-chan change, want change) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("change %+v, want %+v", got, want)
		}
	case <-time.After(waitBound):
		t.Fatalf("no change to %+v within %v", want, waitBound)
	}
}

// TestProberDownAndBack: a replica that stops listening goes down, and
// comes back up once it listens again; a healthy neighbour never changes.
func TestProberDownAndBack(t *testing.T) {
	t.Parallel()
	flaky := newHealthServer(t)
	steady := newHealthServer(t)
	changes := make(chan change, 16)
	var results atomic.Int64
	p := NewProber(protocol.Health{
		Path: "/healthz", Interval: protocol.Duration(10 * time.Millisecond),
		Timeout: protocol.Duration(time.Second), Rise: 2, Fall: 2,
	}, func(id, state string) { changes <- change{id, state} },
		ProberOptions{OnResult: func(string, time.Duration, bool) { results.Add(1) }})
	p.SetTargets([]Target{{ID: "flaky", URL: flaky.url()}, {ID: "steady", URL: steady.url()}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	flaky.stop()
	expectChange(t, changes, change{"flaky", Down})
	if s := p.States(); s["flaky"] != Down || s["steady"] != Up {
		t.Errorf("states %v", s)
	}
	flaky.start(t)
	expectChange(t, changes, change{"flaky", Up})

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(waitBound):
		t.Fatal("Run did not return")
	}
	select {
	case c := <-changes:
		t.Errorf("unexpected change %+v", c)
	default:
	}
	if steady.probes.Load() == 0 || results.Load() == 0 {
		t.Error("the steady replica was never probed")
	}
}

// TestProberRounds drives rounds by hand: status codes, timeouts, rise and
// fall, and targets replaced between rounds.
func TestProberRounds(t *testing.T) {
	t.Parallel()
	h := newHealthServer(t)
	hang := make(chan struct{})
	defer close(hang)
	slowLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})}
	go func() { _ = slow.Serve(slowLn) }()
	defer slow.Close()

	var got []change
	p := NewProber(protocol.Health{Path: "/healthz", Timeout: protocol.Duration(50 * time.Millisecond), Rise: 1, Fall: 2},
		func(id, state string) { got = append(got, change{id, state}) }, ProberOptions{})
	p.SetTargets([]Target{{ID: "a", URL: h.url()}, {ID: "slow", URL: "http://" + slowLn.Addr().String()}})
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()

	round := func(want ...change) {
		t.Helper()
		got = nil
		p.Round(ctx)
		if len(got) != len(want) {
			t.Fatalf("changes %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("changes %+v, want %+v", got, want)
			}
		}
	}
	round()
	round(change{"slow", Down}) // two timeouts in a row
	h.status.Store(http.StatusServiceUnavailable)
	round()
	round(change{"a", Down})
	h.status.Store(http.StatusTemporaryRedirect) // 3xx counts as up
	round(change{"a", Up})
	h.status.Store(http.StatusInternalServerError)
	round()
	// A new URL for the same id starts afresh (up); a removed target is
	// no longer probed.
	p.SetTargets([]Target{{ID: "a", URL: h.url() + "v2/"}})
	if s := p.States(); len(s) != 1 || s["a"] != Up {
		t.Fatalf("states %v", s)
	}
	round()
	round(change{"a", Down}) // /base/v2/healthz is a 404
}

func TestProbeURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, path, want string }{
		{"http://h:1", "/healthz", "http://h:1/healthz"},
		{"http://h:1/", "/healthz", "http://h:1/healthz"},
		{"http://h:1/api", "/healthz", "http://h:1/api/healthz"},
	} {
		if got := probeURL(tc.base, tc.path); got != tc.want {
			t.Errorf("probeURL(%q, %q) = %q, want %q", tc.base, tc.path, got, tc.want)
		}
	}
}
