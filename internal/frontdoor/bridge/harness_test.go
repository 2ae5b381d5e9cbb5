package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The harness: a bridge in front of a real hub over a real bbolt log, and
// replicas that are real counter servers (internal/backend) behind a tiny
// in-test agent per replica: it streams the hub's log in process
// (Hub.Stream), delivers each entry over HTTP to its counter, and gives
// the hub the reply (Hub.Replies) and its applied position (Hub.Applied),
// as `fulcrum agent replicated` does over the admin API.

// waitBound bounds every wait in these tests; nothing waits by sleeping.
const waitBound = 10 * time.Second

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// replica is one counter server and its in-test agent.
type replica struct {
	id      string
	counter backend.Counter
	srv     *httptest.Server
	live    atomic.Bool

	mu sync.Mutex
	// gate, when not nil, holds the agent before its next delivery until
	// it is closed (pause, resume).
	gate chan struct{}
	// held receives a value for each entry the agent holds at the gate
	// (when there is room).
	held    chan struct{}
	replies map[uint64]protocol.ReplicaReply
	applied uint64
	// changed is closed and replaced whenever applied moves.
	changed chan struct{}
}

// pause holds the replica's agent before its next delivery.
func (r *replica) pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate == nil {
		r.gate = make(chan struct{})
	}
}

// resume lets the replica's agent deliver again.
func (r *replica) resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate != nil {
		close(r.gate)
		r.gate = nil
	}
}

// waitGate returns false when ctx ends while the replica is paused.
func (r *replica) waitGate(ctx context.Context) bool {
	r.mu.Lock()
	g := r.gate
	r.mu.Unlock()
	if g == nil {
		return true
	}
	select {
	case r.held <- struct{}{}:
	default:
	}
	select {
	case <-g:
		return true
	case <-ctx.Done():
		return false
	}
}

// evictReplies forgets every reply the agent keeps, as an agent does after
// 10,000 replies or 10 minutes.
func (r *replica) evictReplies() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies = map[uint64]protocol.ReplicaReply{}
}

func (r *replica) applyDone(rep protocol.ReplicaReply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies[rep.Position] = rep
	r.applied = rep.Position
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *replica) reply(pos uint64) protocol.ReplicaReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rep, ok := r.replies[pos]; ok {
		return rep
	}
	return protocol.ReplicaReply{Position: pos, Evicted: true}
}

// waitApplied waits until the replica's agent applied position pos.
func (r *replica) waitApplied(t testing.TB, pos uint64) {
	t.Helper()
	deadline := time.After(waitBound)
	for {
		r.mu.Lock()
		applied, ch := r.applied, r.changed
		r.mu.Unlock()
		if applied >= pos {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("replica %s: applied %d, still waiting for %d", r.id, applied, pos)
		}
	}
}

// state is the counter's state as GET /fulcrum/state answers it.
func (r *replica) state(t testing.TB) []byte {
	t.Helper()
	res, err := http.Get(r.srv.URL + protocol.StatePath)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s of %s: %d %v", protocol.StatePath, r.id, res.StatusCode, err)
	}
	return b
}

// testGroup is the balancer's side of the group as the bridge sees it: a
// snapshot of the live replicas (round-robin), and the calls it observed.
type testGroup struct {
	name       string
	replicated protocol.Replicated
	timeouts   protocol.Timeouts
	reps       []*replica
	counters   map[string]*frontdoor.Counters
	lives      map[string]*strategy.Live

	snap     atomic.Pointer[frontdoor.Snapshot]
	observed chan string // replica ids of observed calls
}

func (g *testGroup) publish() {
	strat, err := strategy.New(strategy.RoundRobinName, nil, strategy.Env{})
	if err != nil {
		panic(err)
	}
	snap := &frontdoor.Snapshot{
		Group: g.name, Binding: protocol.BindingReplicated,
		Members: map[string]*frontdoor.Member{}, Timeouts: g.timeouts, Replicated: g.replicated,
	}
	var eligible []*strategy.Replica
	for _, r := range g.reps {
		u, _ := url.Parse(r.srv.URL)
		rep := &strategy.Replica{ID: r.id, Address: r.srv.URL, Weight: 1, Metrics: strategy.NoMetrics, Live: g.lives[r.id]}
		state := protocol.StateDown
		if r.live.Load() {
			state = protocol.StateActive
		}
		m := &frontdoor.Member{Replica: rep, Address: r.srv.URL, URL: u, State: state, Counters: g.counters[r.id]}
		snap.Members[r.id] = m
		if state == protocol.StateActive {
			rep.Index = len(eligible)
			eligible = append(eligible, rep)
			snap.Eligible = append(snap.Eligible, m)
		}
	}
	snap.Picker = strat.Picker(eligible)
	g.snap.Store(snap)
}

func (g *testGroup) Snapshot() *frontdoor.Snapshot         { return g.snap.Load() }
func (g *testGroup) Bound(*frontdoor.Member, string, bool) {}
func (g *testGroup) Observe(m *frontdoor.Member, _ time.Duration, failed bool) {
	if failed {
		m.Counters.Failures.Add(1)
	}
	select {
	case g.observed <- m.ID():
	default:
	}
}

// env is one replicated group: log, hub, replicas, bridge.
type env struct {
	t    testing.TB
	db   *boltlog.DB
	log  *boltlog.Log
	hub  *replhub.Hub
	g    *testGroup
	reps []*replica
	srv  *Server
	url  string
	acc  *lockedBuffer
}

type envConfig struct {
	replicas   int
	replicated protocol.Replicated
	limits     replog.Limits
	timeouts   protocol.Timeouts
	opts       Options
	// wrap, when not nil, wraps the hub the bridge orders through.
	wrap func(Orderer) Orderer
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	db, err := boltlog.Open(filepath.Join(t.TempDir(), boltlog.FileName), boltlog.Options{SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	l, err := db.Group("g", boltlog.GroupOptions{Limits: cfg.limits})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, log: l, acc: &lockedBuffer{}}
	e.g = &testGroup{name: "g", replicated: cfg.replicated, timeouts: cfg.timeouts,
		counters: map[string]*frontdoor.Counters{}, lives: map[string]*strategy.Live{}, observed: make(chan string, 1024)}
	for i := range cfg.replicas {
		r := &replica{id: "r" + strconv.Itoa(i+1), replies: map[uint64]protocol.ReplicaReply{}, changed: make(chan struct{}), held: make(chan struct{}, 16)}
		r.srv = httptest.NewServer(backend.NewCounterHandler(&r.counter, backend.CounterOptions{}))
		t.Cleanup(r.srv.Close)
		r.live.Store(true)
		e.reps = append(e.reps, r)
		e.g.counters[r.id] = new(frontdoor.Counters)
		e.g.lives[r.id] = new(strategy.Live)
	}
	e.g.reps = e.reps
	e.g.publish()
	// Cleanups run last first: the bridge, then the agents and the hub,
	// then the counters, then the log.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	e.hub = replhub.New(replhub.Options{
		Group: "g", Instance: "test", Log: l, Logger: quietLogger(),
		Live: func() []replhub.Peer {
			var ps []replhub.Peer
			for _, r := range e.reps {
				if r.live.Load() {
					ps = append(ps, replhub.Peer{ID: r.id, Address: r.srv.URL})
				}
			}
			return ps
		},
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.hub.Run(ctx)
	}()
	for _, r := range e.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.runAgent(ctx, r)
		}()
	}

	opts := cfg.opts
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	if opts.AccessLog == nil {
		opts.AccessLog = e.acc
	}
	var o Orderer = e.hub
	if cfg.wrap != nil {
		o = cfg.wrap(e.hub)
	}
	e.srv = New(e.g, o, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ln) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), waitBound)
		defer scancel()
		if err := e.srv.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	e.url = "http://" + ln.Addr().String()
	return e
}

// runAgent is replica r's agent: it applies the log in order until ctx
// ends.
func (e *env) runAgent(ctx context.Context, r *replica) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for ev := range e.hub.Stream(ctx, r.id, 0) {
		switch ev.Type {
		case protocol.LogEventEntry:
			if !r.waitGate(ctx) {
				return
			}
			rep, err := deliver(ctx, client, r.srv.URL, ev.Position, ev.Request)
			if err != nil {
				if ctx.Err() == nil {
					e.t.Errorf("replica %s: delivering position %d: %v", r.id, ev.Position, err)
				}
				return
			}
			r.applyDone(rep)
			e.hub.Replies(r.id, protocol.ReplyBatch{Replies: []protocol.ReplicaReply{rep}})
			e.hub.Applied(r.id, protocol.AppliedReport{Applied: ev.Position, Checkpoints: true})
		case protocol.LogEventReplyRequest:
			e.hub.Replies(r.id, protocol.ReplyBatch{Replies: []protocol.ReplicaReply{r.reply(ev.Position)}})
		case protocol.LogEventError:
			if ctx.Err() == nil {
				e.t.Errorf("replica %s: stream ended: %s: %s", r.id, ev.Code, ev.Message)
			}
			return
		}
	}
}

// deliver sends an ordered request to the server at base, stamped as an
// agent stamps it, and returns the server's reply.
func deliver(ctx context.Context, client *http.Client, base string, pos uint64, or *protocol.OrderedRequest) (protocol.ReplicaReply, error) {
	if or == nil || or.Kind != protocol.KindHTTP {
		return protocol.ReplicaReply{}, errors.New("not an HTTP request")
	}
	req, err := http.NewRequestWithContext(ctx, or.Method, base+or.Target, bytes.NewReader(or.Body))
	if err != nil {
		return protocol.ReplicaReply{}, err
	}
	if or.Header != nil {
		req.Header = or.Header.Clone()
	}
	req.Header.Set(protocol.HeaderTime, or.Time.UTC().Format(time.RFC3339Nano))
	req.Header.Set(protocol.HeaderSeed, strconv.FormatUint(or.Seed, 10))
	req.Header.Set(protocol.HeaderPosition, strconv.FormatUint(pos, 10))
	res, err := client.Do(req)
	if err != nil {
		return protocol.ReplicaReply{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return protocol.ReplicaReply{}, err
	}
	return protocol.ReplicaReply{Position: pos, Status: res.StatusCode, Header: res.Header, Body: body}, nil
}

// nextPosition appends a probe entry straight to the log and returns its
// position: with bbolt's dense positions, one more than the entries
// appended before it.
func (e *env) nextPosition(t testing.TB, probe string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	// GET /healthz changes nothing on a counter.
	payload, _ := json.Marshal(&protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: http.MethodGet, Target: "/healthz", Time: time.Now().UTC()})
	pos, existed, err := e.log.AppendOrGet(ctx, replog.Append{Session: "probe-" + probe, Seq: 1, Payload: payload, Origin: "probe"})
	if err != nil || existed {
		t.Fatalf("probe append: %d %v %v", pos, existed, err)
	}
	return pos
}

// client is an HTTP client of the bridge, its idle connections closed at
// the end of the test.
func (e *env) client(t testing.TB) *http.Client {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// answer is a response as a test reads it.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) position(t testing.TB) uint64 {
	t.Helper()
	p, err := a.pos()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (a answer) pos() (uint64, error) {
	p, err := strconv.ParseUint(a.header.Get(protocol.HeaderPosition), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("answer %d %s: no %s (%q)", a.status, a.body, protocol.HeaderPosition, a.header.Get(protocol.HeaderPosition))
	}
	return p, nil
}

// value is a counter reply's value.
func (a answer) value(t testing.TB) int64 {
	t.Helper()
	v, err := a.counterValue()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (a answer) counterValue() (int64, error) {
	var v struct {
		Value *int64 `json:"value"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil || v.Value == nil {
		return 0, fmt.Errorf("answer %d %q: not a counter reply: %v", a.status, a.body, err)
	}
	return *v.Value, nil
}

// errorDetail is the error an error answer carries.
func (a answer) errorDetail(t testing.TB) errorDetail {
	t.Helper()
	var b httpdoor.ErrorBody
	if err := json.Unmarshal(a.body, &b); err != nil || b.Error.Code == "" {
		t.Fatalf("answer %d %q: not an error body: %v", a.status, a.body, err)
	}
	return b.Error
}

// do sends one request to the bridge. Call it from the test's goroutine;
// others call try.
func (e *env) do(t testing.TB, c *http.Client, method, path string, header map[string]string, body []byte) answer {
	t.Helper()
	a, err := e.try(c, method, path, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// try sends one request to the bridge.
func (e *env) try(c *http.Client, method, path string, header map[string]string, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	if err != nil {
		return answer{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}, nil
}

// session is the headers of call seq of a protocol-aware client.
func session(id string, seq uint64) map[string]string {
	return map[string]string{protocol.HeaderSession: id, protocol.HeaderSequence: strconv.FormatUint(seq, 10)}
}

// lockedBuffer is an io.Writer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
