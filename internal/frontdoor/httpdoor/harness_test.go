package httpdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// waitBound bounds every wait in these tests; nothing waits by sleeping.
const waitBound = 10 * time.Second

func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for a value on ch, bounded.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// ---- the group: a stand-in for the balancer over real replica servers.

type boundEvent struct {
	replica, client string
	moved           bool
}

type observeEvent struct {
	replica string
	failed  bool
}

// spec is one member of a test group.
type spec struct {
	id, url string
	state   string // active when empty
}

// groupConfig is what a test group publishes in its snapshot.
type groupConfig struct {
	name        string // "g" when empty
	binding     string
	members     []spec
	maxInflight int
	queue       protocol.Queue // with WithDefaults' values filled in
	timeouts    protocol.Timeouts
	planned     map[string]string // client -> replica id
	// lookup is the snapshot's LookupMove (nil: none); the snapshot's
	// MoveBound then sends to the group's moveBound.
	lookup   func(ctx context.Context, client string) (string, bool)
	observer strategy.Observer
	// picker builds the picker; round-robin from the first member when nil.
	picker func([]*strategy.Replica) strategy.Picker
	key    strategy.KeySpec
	retry  string // the group's retry setting ("": unsent)
}

// testGroup implements frontdoor.Group the way the balancer does: Bound
// counts bindings and rebinds, Observe counts failures.
type testGroup struct {
	snap     atomic.Pointer[frontdoor.Snapshot]
	queue    *frontdoor.Queue
	mu       sync.Mutex
	lives    map[string]*strategy.Live
	counters map[string]*frontdoor.Counters
	bound    chan boundEvent
	observed chan observeEvent
	// moveBound receives the snapshot's MoveBound calls (moved true).
	moveBound chan boundEvent
}

func newTestGroup(cfg groupConfig) *testGroup {
	g := &testGroup{
		lives:     map[string]*strategy.Live{},
		counters:  map[string]*frontdoor.Counters{},
		bound:     make(chan boundEvent, 4096),
		observed:  make(chan observeEvent, 4096),
		moveBound: make(chan boundEvent, 4096),
	}
	g.publish(cfg)
	return g
}

// publish swaps in a new snapshot built from cfg; members keep their live
// state and counters across snapshots, as with the balancer.
func (g *testGroup) publish(cfg groupConfig) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cfg.name == "" {
		cfg.name = "g"
	}
	snap := &frontdoor.Snapshot{
		Group:       cfg.name,
		Binding:     cfg.binding,
		Key:         cfg.key,
		Members:     map[string]*frontdoor.Member{},
		MaxInflight: cfg.maxInflight,
		Timeouts:    cfg.timeouts,
		Observer:    cfg.observer,
		Retry:       cfg.retry,
	}
	if g.queue == nil {
		g.queue = frontdoor.NewQueue(g.Snapshot, nil)
	}
	g.queue.Configure(cfg.queue)
	if cfg.queue.Enabled() {
		snap.Queue = g.queue
	}
	var reps []*strategy.Replica
	for _, sp := range cfg.members {
		if g.lives[sp.id] == nil {
			g.lives[sp.id] = new(strategy.Live)
			g.counters[sp.id] = new(frontdoor.Counters)
		}
		u, err := url.Parse(sp.url)
		if err != nil {
			panic(err)
		}
		state := sp.state
		if state == "" {
			state = protocol.StateActive
		}
		rep := &strategy.Replica{ID: sp.id, Weight: 1, Metrics: strategy.NoMetrics, Live: g.lives[sp.id]}
		m := &frontdoor.Member{Replica: rep, Address: sp.url, URL: u, State: state, Counters: g.counters[sp.id], Queue: snap.Queue}
		snap.Members[sp.id] = m
		if state == protocol.StateActive {
			rep.Index = len(snap.Eligible)
			snap.Eligible = append(snap.Eligible, m)
			reps = append(reps, rep)
		}
	}
	for client, id := range cfg.planned {
		if snap.Planned == nil {
			snap.Planned = map[string]*frontdoor.Member{}
		}
		snap.Planned[client] = snap.Members[id]
	}
	if cfg.lookup != nil {
		snap.LookupMove = cfg.lookup
		snap.MoveBound = func(client, id string) { g.moveBound <- boundEvent{id, client, true} }
	}
	if cfg.picker == nil {
		cfg.picker = newRR
	}
	snap.Picker = cfg.picker(reps)
	g.snap.Store(snap)
	if snap.Queue != nil {
		snap.Queue.Kick()
	}
}

func (g *testGroup) Snapshot() *frontdoor.Snapshot { return g.snap.Load() }

func (g *testGroup) Bound(m *frontdoor.Member, client string, moved bool) {
	m.Replica.Live.Bindings.Add(1)
	m.Counters.Bindings.Add(1)
	if moved {
		m.Counters.Rebinds.Add(1)
	}
	g.bound <- boundEvent{m.ID(), client, moved}
}

func (g *testGroup) Observe(m *frontdoor.Member, _ time.Duration, failed bool) {
	if failed {
		m.Counters.Failures.Add(1)
	}
	g.observed <- observeEvent{m.ID(), failed}
}

func (g *testGroup) live(id string) *strategy.Live {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lives[id]
}

func (g *testGroup) counter(id string) *frontdoor.Counters {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counters[id]
}

// rrPicker is a deterministic round-robin starting at the first replica.
type rrPicker struct {
	reps []*strategy.Replica
	next atomic.Uint64
}

func newRR(reps []*strategy.Replica) strategy.Picker { return &rrPicker{reps: reps} }

func (p *rrPicker) Pick(*strategy.Request) (*strategy.Replica, error) {
	if len(p.reps) == 0 {
		return nil, strategy.ErrNoReplica
	}
	k := p.next.Add(1) - 1
	return p.reps[k%uint64(len(p.reps))], nil
}

// firstPicker always picks the first replica (a strategy that keeps
// choosing the same member, like a hash).
type firstPicker struct{ reps []*strategy.Replica }

func newFirst(reps []*strategy.Replica) strategy.Picker { return firstPicker{reps} }

func (p firstPicker) Pick(*strategy.Request) (*strategy.Replica, error) {
	if len(p.reps) == 0 {
		return nil, strategy.ErrNoReplica
	}
	return p.reps[0], nil
}

// ---- replicas: real servers on loopback speaking HTTP/1.1 and h2c.

type replica struct {
	id       string
	addr     string
	url      string // base URL with the base path
	srv      *http.Server
	hits     atomic.Int64
	newConns atomic.Int64
}

// echo is what the default replica handler answers.
type echo struct {
	Replica string `json:"replica"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Query   string `json:"query"`
	Proto   string `json:"proto"`
	Host    string `json:"host"`
	XFF     string `json:"xff"`
	XFProto string `json:"xfproto"`
	XFHost  string `json:"xfhost"`
	Body    string `json:"body"`
}

func startReplica(t *testing.T, id, basePath string, h http.HandlerFunc) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rp := &replica{id: id, addr: ln.Addr().String()}
	rp.url = "http://" + rp.addr + basePath
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(echo{
				Replica: id, Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
				Proto: r.Proto, Host: r.Host, XFF: r.Header.Get("X-Forwarded-For"),
				XFProto: r.Header.Get("X-Forwarded-Proto"), XFHost: r.Header.Get("X-Forwarded-Host"),
				Body: string(body),
			})
		}
	}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	rp.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rp.hits.Add(1)
			h(w, r)
		}),
		Protocols: protos,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				rp.newConns.Add(1)
			}
		},
	}
	go func() { _ = rp.srv.Serve(ln) }()
	t.Cleanup(func() { _ = rp.srv.Close() })
	return rp
}

func (rp *replica) spec() spec { return spec{id: rp.id, url: rp.url} }

// deadAddress is a loopback address where nothing listens.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// ---- the front door under test.

type frontDoor struct {
	*Server
	addr  string
	url   string
	serve chan error
}

func startFrontDoor(t *testing.T, g frontdoor.Group, opts Options) *frontDoor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fd := &frontDoor{Server: New(g, opts), addr: ln.Addr().String(), serve: make(chan error, 1)}
	fd.url = "http://" + fd.addr
	go func() { fd.serve <- fd.Serve(ln) }()
	t.Cleanup(func() { fd.stop(t) })
	return fd
}

// stop shuts the front door down (once) and checks Serve's result.
func (fd *frontDoor) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := fd.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	select {
	case err, ok := <-fd.serve:
		if ok && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		if ok {
			close(fd.serve)
		}
	case <-ctx.Done():
		t.Error("Serve did not return after Shutdown")
	}
}

// ---- clients.

// noFollow is an HTTP/1.1 client that does not follow redirects.
func noFollow(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       waitBound,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func h1Client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitBound}
}

func h2cClient(t *testing.T) *http.Client {
	t.Helper()
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Proxy: nil, Protocols: p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitBound}
}

func do(t *testing.T, c *http.Client, method, url string, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return res, b
}

func decodeEcho(t *testing.T, b []byte) echo {
	t.Helper()
	var e echo
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("replica answer %q: %v", b, err)
	}
	return e
}

func decodeError(t *testing.T, res *http.Response, b []byte) ErrorDetail {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var eb ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return eb.Error
}

// withSlow wraps h: a call to /slow waits until its client goes away or
// the test ends, so that the front door answers it 504 at the request
// timeout (witnessTimeout).
func withSlow(t *testing.T, h http.HandlerFunc) http.HandlerFunc {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			h(w, r)
			return
		}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}
}

// witnessTimeout calls /slow of a replica wrapped by withSlow, on a
// connection of its own: when it returns, the group's request timeout has
// passed since it was called — without the test reading the clock.
func witnessTimeout(t *testing.T, fd *frontDoor) {
	t.Helper()
	if res, b := do(t, h1Client(t), "GET", fd.url+"/slow", ""); res.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("witness call: %d %s, want 504 at the request timeout", res.StatusCode, b)
	}
}

// checkIdle asserts no member still counts a call in flight.
func checkIdle(t *testing.T, g *testGroup) {
	t.Helper()
	for id := range g.Snapshot().Members {
		if n := g.live(id).Inflight.Load(); n != 0 {
			t.Errorf("replica %s: Live.Inflight = %d after the calls, want 0", id, n)
		}
	}
}

func registryDuration(d time.Duration) protocol.Duration { return protocol.Duration(d) }

// quietLogger drops the front door's own log lines (expected failures).
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
