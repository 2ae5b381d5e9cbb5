package replagent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// hubEnv is the balancer's side of a replicated group for the agents: the
// real hub over a real bbolt log, served on a real socket by the three
// log routes (as the admin API serves them, each replica known by its
// token), and what the routes saw.
type hubEnv struct {
	hub *replhub.Hub
	log replog.Log
	api *httptest.Server

	mu      sync.Mutex
	live    []replhub.Peer
	replied map[string]uint64 // replica → highest position it replied to
	applied map[string]uint64 // replica → last applied report
	changed chan struct{}     // closed and replaced when replied or applied change
}

func newHubEnv(t *testing.T) *hubEnv {
	t.Helper()
	db, err := boltlog.Open(filepath.Join(t.TempDir(), boltlog.FileName), boltlog.Options{SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	l, err := db.Group("g", boltlog.GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := &hubEnv{log: l, replied: map[string]uint64{}, applied: map[string]uint64{}, changed: make(chan struct{})}
	e.hub = replhub.New(replhub.Options{Group: "g", Instance: "test", Log: l, Logger: slog.New(slog.DiscardHandler),
		Live: func() []replhub.Peer {
			e.mu.Lock()
			defer e.mu.Unlock()
			return slices.Clone(e.live)
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	mux := http.NewServeMux()
	replica := func(w http.ResponseWriter, r *http.Request) (string, bool) {
		id, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer token-")
		if !ok {
			http.Error(w, "no replica token", http.StatusUnauthorized)
		}
		return id, ok
	}
	mux.HandleFunc("GET /v1/groups/g/log", func(w http.ResponseWriter, r *http.Request) {
		id, ok := replica(w, r)
		if !ok {
			return
		}
		from, err := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		for ev := range e.hub.Stream(r.Context(), id, from) {
			if enc.Encode(ev) != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("POST /v1/groups/g/log/applied", func(w http.ResponseWriter, r *http.Request) {
		id, ok := replica(w, r)
		var rep protocol.AppliedReport
		if !ok || json.NewDecoder(r.Body).Decode(&rep) != nil {
			return
		}
		e.hub.Applied(id, rep)
		e.note(e.applied, id, rep.Applied)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/groups/g/log/replies", func(w http.ResponseWriter, r *http.Request) {
		id, ok := replica(w, r)
		var b protocol.ReplyBatch
		if !ok || json.NewDecoder(r.Body).Decode(&b) != nil {
			return
		}
		e.hub.Replies(id, b)
		for _, rep := range b.Replies {
			e.note(e.replied, id, rep.Position)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.api = httptest.NewServer(mux)
	t.Cleanup(e.api.Close)
	return e
}

func (e *hubEnv) note(m map[string]uint64, id string, pos uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m[id] = max(m[id], pos)
	close(e.changed)
	e.changed = make(chan struct{})
}

// waitAll waits until every replica in ids has pos in m (replied or
// applied).
func (e *hubEnv) waitAll(t *testing.T, m map[string]uint64, pos uint64, ids ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		e.mu.Lock()
		ok := true
		for _, id := range ids {
			ok = ok && m[id] >= pos
		}
		ch := e.changed
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("replicas %v did not all reach position %d", ids, pos)
		}
	}
}

// hubReplica is a counter and its agent streaming from the hub's routes.
type hubReplica struct {
	id      string
	counter *backend.Counter
	agent   *replagent.Agent
	listen  *httptest.Server
	runErr  chan error
}

// start starts replica id's counter and agent, and makes it live.
func (e *hubEnv) start(t *testing.T, id string) *hubReplica {
	t.Helper()
	r := &hubReplica{id: id, runErr: make(chan error, 1)}
	var srv *httptest.Server
	r.counter, srv = counterServer(t)
	st, err := replagent.OpenStore(t.TempDir(), "g")
	if err != nil {
		t.Fatal(err)
	}
	token := func() (string, bool) { return "token-" + id, true }
	quiet := slog.New(slog.DiscardHandler)
	d := newHTTP(t, srv.URL, replagent.HTTPOptions{})
	r.agent, err = replagent.New(replagent.Options{Group: "g", Self: id, Deliverer: d, Store: st,
		Source: &replagent.HTTPSource{Admins: []string{e.api.URL}, Group: "g", Token: token, Logger: quiet},
		Admin:  &replagent.AdminClient{Group: "g", Token: token}, Admins: []string{e.api.URL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	proxy, _ := replagent.NewProxy(srv.URL)
	r.listen = httptest.NewServer(r.agent.Handler(proxy))
	e.mu.Lock()
	e.live = append(e.live, replhub.Peer{ID: id, Address: r.listen.URL})
	e.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.runErr <- r.agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := wait(t, r.runErr, id+"'s agent to stop"); err != nil {
			t.Errorf("%s's agent: %v", id, err)
		}
		r.listen.Close()
		st.Close()
	})
	return r
}

// order sends n increments through the hub from 4 clients and returns the
// values the clients got and the highest position.
func (e *hubEnv) order(t *testing.T, session string, n int) ([]int64, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var values []int64
	var last uint64
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := c; i < n; i += 4 {
				rep, err := e.hub.Order(ctx, replhub.Call{Session: session, Seq: uint64(i + 1), Request: &protocol.OrderedRequest{
					Kind: protocol.KindHTTP, Method: http.MethodPost, Target: "/increment", Time: t0.Add(time.Duration(i)), Seed: uint64(i)}})
				if err != nil {
					t.Errorf("Order %d: %v", i, err)
					return
				}
				var v struct{ Value int64 }
				if rep.Status != 200 || json.Unmarshal(rep.Body, &v) != nil {
					t.Errorf("Order %d: %d %s", i, rep.Status, rep.Body)
					return
				}
				mu.Lock()
				values = append(values, v.Value)
				last = max(last, rep.Position)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(values)
	return values, last
}

func wantValues(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	var want []int64
	for v := from; v <= to; v++ {
		want = append(want, v)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("clients got values %v, want each of %d..%d once (every call applied once, in one order)", got, from, to)
	}
}

// TestAgentsOnTheRealHub runs agents against the real hub and bbolt log
// over HTTP: concurrent calls are each applied once by every replica in
// one order; a replica that joins after the log was trimmed takes a
// checkpoint from a live one and ends in the same state.
func TestAgentsOnTheRealHub(t *testing.T) {
	t.Parallel()
	e := newHubEnv(t)
	r1, r2 := e.start(t, "r1"), e.start(t, "r2")
	values, last := e.order(t, "s1", 24)
	wantValues(t, values, 1, 24)
	e.waitAll(t, e.replied, last, "r1", "r2")
	if r1.counter.State() != r2.counter.State() || r1.counter.State().Value != 24 {
		t.Fatalf("after 24 calls: r1 %+v, r2 %+v, want equal states at 24", r1.counter.State(), r2.counter.State())
	}

	// The replicas report how far they applied; the log is trimmed up to
	// there, so a new replica cannot replay it from the start.
	e.waitAll(t, e.applied, last, "r1", "r2")
	if err := e.log.Trim(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	r3 := e.start(t, "r3")
	values, last = e.order(t, "s2", 12)
	wantValues(t, values, 25, 36)
	e.waitAll(t, e.replied, last, "r1", "r2", "r3")
	if s1, s3 := r1.counter.State(), r3.counter.State(); s1 != s3 || s3.Value != 36 || s3.Increments != 36 {
		t.Fatalf("r3, joined by state transfer: %+v; r1: %+v; want equal states at 36", s3, s1)
	}
	resp, body := get(t, r3.listen.URL+"/value")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"value":36`) {
		t.Fatalf("GET /value through r3's agent: %d %s", resp.StatusCode, body)
	}
}
