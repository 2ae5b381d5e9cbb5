package moves_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// firstPicker always picks the first eligible replica.
type firstPicker struct{ reps []*strategy.Replica }

func (p firstPicker) Pick(*strategy.Request) (*strategy.Replica, error) {
	if len(p.reps) == 0 {
		return nil, strategy.ErrNoReplica
	}
	return p.reps[0], nil
}

// group is a follower instance's side of a group, as the balancer would
// publish it: members, no moves of its own, moves looked up in etcd.
type group struct {
	snap      atomic.Pointer[frontdoor.Snapshot]
	bound     chan string // "client>replica"
	moveBound chan string
}

func newGroup(name string, lookup func(context.Context, string) (string, bool), ids ...string) *group {
	g := &group{bound: make(chan string, 16), moveBound: make(chan string, 16)}
	snap := &frontdoor.Snapshot{Group: name, Binding: protocol.OnDemand, Members: map[string]*frontdoor.Member{},
		LookupMove: lookup, MoveBound: func(client, id string) { g.moveBound <- client + ">" + id }}
	var reps []*strategy.Replica
	for i, id := range ids {
		u := &url.URL{Scheme: "http", Host: net.JoinHostPort("10.0.0."+string(rune('1'+i)), "80")}
		rep := &strategy.Replica{ID: id, Index: i, Weight: 1, Metrics: strategy.NoMetrics, Live: &strategy.Live{}}
		m := &frontdoor.Member{Replica: rep, Address: u.String(), URL: u, State: protocol.StateActive, Counters: &frontdoor.Counters{}}
		snap.Members[id] = m
		snap.Eligible = append(snap.Eligible, m)
		reps = append(reps, rep)
	}
	snap.Picker = firstPicker{reps}
	g.snap.Store(snap)
	return g
}

func (g *group) Snapshot() *frontdoor.Snapshot { return g.snap.Load() }

func (g *group) Bound(m *frontdoor.Member, client string, _ bool) { g.bound <- client + ">" + m.ID() }

func (g *group) Observe(*frontdoor.Member, time.Duration, bool) {}

func recv(ctx context.Context, t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("no %s: %v", what, ctx.Err())
		return ""
	}
}

// TestFrontDoorFollowsCommittedMove: the leader commits a move; a client
// sent back by its replica comes to another instance's front door, which
// has no move for it, looks it up in etcd and binds it there. With etcd
// frozen the same front door picks as usual, within the lookup's bound.
func TestFrontDoorFollowsCommittedMove(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{})
	ctx := ctxFor(t, 30*time.Second)
	prefix := newPrefix(t)
	leaderCli := client(t, c)
	_, fence := elect(ctx, t, leaderCli, prefix, "prime")
	if err := newStore(t, moves.Options{Client: leaderCli, Prefix: prefix}).Commit(ctx, fence, "prime", 2*time.Second,
		[]moves.Move{{Client: "c1", To: "r3", Epoch: 1, PlannedAt: at}}); err != nil {
		t.Fatal(err)
	}

	fcli := client(t, c)
	follower := newStore(t, moves.Options{Client: fcli, Prefix: prefix})
	// The follower's connection up and used once, so that the front
	// door's first lookup is not also the connection's first request.
	if _, _, err := newStore(t, moves.Options{Client: fcli, Prefix: prefix, LookupTimeout: 5 * time.Second}).Lookup(ctx, "prime", "warm-up"); err != nil {
		t.Fatal(err)
	}
	lookupErrs := make(chan error, 16)
	g := newGroup("prime", follower.LookupFor("prime", func(err error) { lookupErrs <- err }), "r1", "r2", "r3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fd := httpdoor.New(g, httpdoor.Options{Logger: slog.New(slog.DiscardHandler)})
	served := make(chan error, 1)
	go func() { served <- fd.Serve(ln) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := fd.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rebind := func(client string) (string, time.Duration) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+ln.Addr().String()+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(protocol.HeaderClient, client)
		req.Header.Set(protocol.HeaderBinding, "prime/r1")
		req.Header.Set(protocol.HeaderRebind, "1")
		start := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("status %d, want 307", res.StatusCode)
		}
		return res.Header.Get(protocol.HeaderReplica), time.Since(start)
	}

	if got, took := rebind("c1"); got != "r3" {
		t.Errorf("client with a committed move went to %q, want r3", got)
	} else {
		t.Logf("rebind through a lookup in etcd answered in %v", took.Round(time.Microsecond))
	}
	if got := recv(ctx, t, g.moveBound, "MoveBound"); got != "c1>r3" {
		t.Errorf("MoveBound %s, want c1>r3", got)
	}
	recv(ctx, t, g.bound, "Bound")
	if got, _ := rebind("c2"); got != "r1" {
		t.Errorf("client with no move went to %q, want the picker's r1", got)
	}
	recv(ctx, t, g.bound, "Bound")

	if err := c.Member(0).Pause(); err != nil {
		t.Fatal(err)
	}
	got, took := rebind("c1")
	t.Logf("rebind with etcd frozen answered in %v", took.Round(time.Millisecond))
	if got != "r1" {
		t.Errorf("with etcd frozen the client went to %q, want the picker's r1", got)
	}
	if took >= time.Second {
		t.Errorf("with etcd frozen the rebind took %v, want about %v (bound 1s)", took, moves.LookupTimeout)
	}
	if err := recv2(ctx, t, lookupErrs); err == nil {
		t.Errorf("the failed lookup reported no error")
	}
	recv(ctx, t, g.bound, "Bound")
	if err := c.Member(0).Resume(); err != nil {
		t.Fatal(err)
	}
}

func recv2(ctx context.Context, t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		t.Fatalf("no lookup error: %v", ctx.Err())
		return nil
	}
}
