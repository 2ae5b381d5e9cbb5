package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// replicatedServer is a balancer whose replicated groups keep their logs
// in a bbolt log.db, and its admin API on a real socket.
func replicatedServer(t *testing.T) (string, *balancer.Balancer) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := boltlog.Open(filepath.Join(t.TempDir(), boltlog.FileName), boltlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: log, AdminURL: "http://" + srv.Listener.Addr().String(), Instance: "solo",
		ReplicatedLog: func(group string, lim replog.Limits, ttl time.Duration) (replog.Log, error) {
			return db.Group(group, boltlog.GroupOptions{Limits: lim, SessionTTL: ttl})
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.New(b, api.Options{Logger: log})
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return srv.URL, b
}

// replicatedAgent is "fulcrum agent replicated" run in-process beside a
// counter.
type replicatedAgent struct {
	counter *backend.Counter
	// increments counts the POST /increment the counter served: the
	// entries delivered to it (not those it got by state transfer).
	increments atomic.Int64
	cancel     context.CancelFunc
	done       chan error
	errOut     *syncBuffer
}

func startReplicatedAgent(t *testing.T, admin, group string) *replicatedAgent {
	t.Helper()
	a := &replicatedAgent{counter: &backend.Counter{}, done: make(chan error, 1), errOut: &syncBuffer{}}
	h := backend.NewCounterHandler(a.counter, backend.CounterOptions{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/increment" {
			a.increments.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	root := NewRoot()
	root.SetOut(&syncBuffer{})
	root.SetErr(a.errOut)
	root.SetArgs([]string{"agent", "replicated", "--target", server.URL, "--listen", "127.0.0.1:0", "--register", admin,
		"--group", group, "--data-dir", t.TempDir()})
	go func() { a.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() { a.stop(t) })
	return a
}

// stop ends the agent (it deregisters) and waits for it.
func (a *replicatedAgent) stop(t *testing.T) {
	t.Helper()
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.cancel = nil
	select {
	case err := <-a.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("agent: %v\n%s", err, a.errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Error("agent did not stop within 10s of its context ending")
	}
}

// awaitGroup calls ok on each event of the group (it steps every report
// interval) until it returns true.
func awaitGroup(t *testing.T, b *balancer.Balancer, group, what string, ok func() bool) {
	t.Helper()
	events, unsubscribe, err := b.Subscribe(group)
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !ok() {
		select {
		case _, open := <-events:
			if !open {
				t.Fatalf("group %s went away waiting for %s", group, what)
			}
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// orderIncrements orders n increments through the group's hub from 4
// clients and returns the values they got, sorted.
func orderIncrements(t *testing.T, hub *replhub.Hub, session string, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var values []int64
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := c; i < n; i += 4 {
				rep, err := hub.Order(ctx, replhub.Call{Session: session, Seq: uint64(i + 1), Request: &protocol.OrderedRequest{
					Kind: protocol.KindHTTP, Method: http.MethodPost, Target: "/increment", Time: time.Now().UTC(), Seed: uint64(i)}})
				if err != nil {
					t.Errorf("order %d: %v", i, err)
					return
				}
				var v struct{ Value int64 }
				if rep.Status != http.StatusOK || json.Unmarshal(rep.Body, &v) != nil {
					t.Errorf("order %d: %d %s", i, rep.Status, rep.Body)
					return
				}
				mu.Lock()
				values = append(values, v.Value)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(values)
	return values
}

func seq(from, to int64) []int64 {
	var s []int64
	for v := from; v <= to; v++ {
		s = append(s, v)
	}
	return s
}

// TestAgentReplicatedEndToEnd runs "fulcrum agent replicated" beside real
// counters against a real balancer with a replicated group (its hub over
// a bbolt log.db, the agents streaming the log and posting replies and
// applied positions through the admin API with their replica tokens):
// every ordered call is applied once by every replica in one order; a
// replica that joins later takes a checkpoint from a live one and reaches
// the same state; a replica that stops leaves the group and the others go
// on; a plain client's call through the group's front door (the bridge)
// is applied by every live replica.
func TestAgentReplicatedEndToEnd(t *testing.T) {
	t.Parallel()
	admin, b := replicatedServer(t)
	if _, _, err := b.PutGroup(protocol.Group{Name: "counter", FrontDoor: "127.0.0.1:0", Binding: protocol.BindingReplicated,
		ReportInterval: protocol.Duration(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	hub, _, err := b.ReplicatedHub("counter")
	if err != nil {
		t.Fatal(err)
	}
	replicas := func() int {
		st, err := b.Group("counter")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range st.Replicas {
			if r.ReportAgeMS != nil && r.State == "active" {
				n++
			}
		}
		return n
	}
	a1, a2 := startReplicatedAgent(t, admin, "counter"), startReplicatedAgent(t, admin, "counter")
	awaitGroup(t, b, "counter", "two replicas reporting", func() bool { return replicas() == 2 })

	if got := orderIncrements(t, hub, "s1", 20); !slices.Equal(got, seq(1, 20)) {
		t.Fatalf("20 ordered increments answered %v, want each of 1..20 once", got)
	}
	same := func(want int64, as ...*replicatedAgent) func() bool {
		return func() bool {
			for _, a := range as {
				if a.counter.State() != as[0].counter.State() || a.counter.State().Value != want {
					return false
				}
			}
			return true
		}
	}
	awaitGroup(t, b, "counter", "both counters at 20", same(20, a1, a2))

	// Once the hub knows both have applied 20 (their applied reports, about
	// once a second), a third replica joins by state transfer: its
	// counter gets to 20 without one increment delivered to it.
	awaitGroup(t, b, "counter", "both replicas' applied reports at 20", func() bool {
		st, err := b.Group("counter")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st.Replicas {
			if hub.AppliedBy(r.ID) < 20 {
				return false
			}
		}
		return len(st.Replicas) == 2
	})
	a3 := startReplicatedAgent(t, admin, "counter")
	awaitGroup(t, b, "counter", "the third replica at 20", same(20, a1, a2, a3))
	if n := a3.increments.Load(); n != 0 {
		t.Fatalf("the third replica's counter was delivered %d increments to reach 20, want 0 (a state transfer)", n)
	}

	a1.stop(t)
	awaitGroup(t, b, "counter", "the first replica gone", func() bool { return replicas() == 2 })
	if got := orderIncrements(t, hub, "s2", 8); !slices.Equal(got, seq(21, 28)) {
		t.Fatalf("8 more increments answered %v, want each of 21..28 once", got)
	}
	awaitGroup(t, b, "counter", "the live counters at 28", same(28, a2, a3))
	if v := a1.counter.State().Value; v != 20 {
		t.Fatalf("the stopped replica's counter moved to %d", v)
	}
	if n := a3.increments.Load(); n != 8 {
		t.Fatalf("the third replica's counter was delivered %d increments, want the 8 after it joined", n)
	}

	// A plain client through the group's front door, the bridge.
	st, err := b.Group("counter")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+st.Listening+"/increment", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(bytes.TrimSpace(body)) != `{"value":29}` || resp.Header.Get(protocol.HeaderPosition) == "" {
		t.Fatalf("POST /increment through the bridge: %d %s (position %q), want 200 {\"value\":29} with its position", resp.StatusCode, body, resp.Header.Get(protocol.HeaderPosition))
	}
	awaitGroup(t, b, "counter", "the live counters at 29", same(29, a2, a3))
}
