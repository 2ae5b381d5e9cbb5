package balancer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestClusterBoundNotice: a client sent back by its replica rebinds at an
// instance that does not lead the group, through the move the leader
// committed to etcd; that instance tells the leader (POST
// /v1/cluster/bound), whose analyzer completes the move long before it
// would expire and which deletes the move's key long before its lease
// ends. Notices of another term are not applied; bad ones are refused
// naming the field; an instance that does not lead answers 409.
func TestClusterBoundNotice(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b"), c.start("fulcrum-c")}
	// A long interval: the move expires at the leader after 4 s, and its
	// key's lease is 8 s; the notice must end both well before.
	const interval = time.Second
	_, _, err := nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(interval),
		Binding: protocol.OnDemand, Strategy: "least-loaded"})
	if err != nil {
		t.Fatal(err)
	}
	lead, term := c.leaderNode(0)
	other := nodes[0]
	if other == lead {
		other = nodes[1]
	}
	busy, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:9/"})
	if err != nil {
		t.Fatal(err)
	}
	idle, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:10/"})
	if err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, "both replicas in the other instance's snapshot", func() bool {
		return len(other.b.EligibleIDs(clusterGroup)) == 2
	})
	events, cancelEvents, err := lead.b.Subscribe(clusterGroup)
	if err != nil {
		t.Fatal(err)
	}
	defer cancelEvents()

	var adv protocol.Advisory
	until(t, 15*time.Second, "a high advisory naming c2 from the warm leader", func() bool {
		if code, _, body := reportJSON(t, lead.url, idle.Token, `{"load": 10, "clients": [{"id": "c3", "rate": 10}]}`); code != http.StatusOK {
			t.Fatalf("report of the idle replica at the leader: %d %s", code, body)
		}
		code, _, body := reportJSON(t, lead.url, busy.Token, `{"load": 100, "clients": [{"id": "c1", "rate": 60}, {"id": "c2", "rate": 40}]}`)
		if code != http.StatusOK || json.Unmarshal(body, &adv) != nil {
			t.Fatalf("report of the busy replica at the leader: %d %s", code, body)
		}
		return adv.Advisory == protocol.High && len(adv.Clients) == 1 && adv.Clients[0] == "c2"
	})
	planned := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if to, ok, err := other.moves.Lookup(ctx, clusterGroup, "c2"); err != nil || !ok || to != idle.ID {
		t.Fatalf("c2's move in etcd once advised: %q, %v, %v; want it to %s", to, ok, err, idle.ID)
	}
	if got := lead.b.PlannedClients(clusterGroup); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("the leader's pending moves %v, want [c2]", got)
	}

	// Notices the leader must refuse or not apply: they change nothing.
	bound := func(term uint64) protocol.BoundMoves {
		return protocol.BoundMoves{Group: clusterGroup, Term: term, Moves: []protocol.BoundMove{{Client: "c2", Replica: idle.ID}}}
	}
	for _, stale := range []uint64{uint64(term) - 1, uint64(term) + 1} {
		code, body := postAdmin(t, lead.url+balancer.BoundPath, bound(stale))
		if code != http.StatusOK || !strings.Contains(string(body), `"applied":false`) || !strings.Contains(string(body), fmt.Sprintf("term %d is not term %d", stale, term)) {
			t.Errorf("notice of term %d at the leader (term %d): %d %s; want 200 applied false naming both terms", stale, term, code, body)
		}
	}
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"no term", map[string]any{"group": clusterGroup, "moves": []any{map[string]string{"client": "c2", "replica": idle.ID}}}, "term"},
		{"no moves", protocol.BoundMoves{Group: clusterGroup, Term: uint64(term)}, "moves"},
		{"no replica", protocol.BoundMoves{Group: clusterGroup, Term: uint64(term), Moves: []protocol.BoundMove{{Client: "c2"}}}, "moves[0].replica"},
		{"client twice", protocol.BoundMoves{Group: clusterGroup, Term: uint64(term), Moves: []protocol.BoundMove{{Client: "c2", Replica: idle.ID}, {Client: "c2", Replica: busy.ID}}}, "moves[1].client"},
		{"too many", protocol.BoundMoves{Group: clusterGroup, Term: uint64(term), Moves: make([]protocol.BoundMove, protocol.MaxBoundMoves+1)}, "moves"},
		{"unknown field", map[string]any{"group": clusterGroup, "term": term, "moves": []any{}, "leader": "x"}, "leader"},
	} {
		code, body := postAdmin(t, lead.url+balancer.BoundPath, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"field":"`+tc.field+`"`) {
			t.Errorf("notice with %s: %d %s; want 400 naming %s", tc.name, code, body, tc.field)
		}
	}
	code, body := postAdmin(t, other.url+balancer.BoundPath, bound(uint64(term)))
	if code != http.StatusConflict || !strings.Contains(string(body), `"code":"not_leader"`) || !strings.Contains(string(body), lead.name) {
		t.Errorf("notice at %s, which does not lead: %d %s; want 409 not_leader naming %s", other.name, code, body, lead.name)
	}
	if got := lead.b.PlannedClients(clusterGroup); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("after the refused notices the leader's pending moves are %v, want [c2] still", got)
	}
	if _, ok, err := other.moves.Lookup(ctx, clusterGroup, "c2"); err != nil || !ok {
		t.Fatalf("after the refused notices c2's key: %v, %v; want it still in etcd", ok, err)
	}

	// c2, sent back by its replica, rebinds at the other instance's front
	// door, which finds its move in etcd.
	fd := other.b.FrontDoors()[clusterGroup].Address
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+fd+"/work", nil)
	req.Header.Set(protocol.HeaderClient, "c2")
	req.Header.Set(protocol.HeaderRebind, "1")
	req.Header.Set(protocol.HeaderBinding, clusterGroup+"/"+busy.ID)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get(protocol.HeaderReplica) != idle.ID {
		t.Fatalf("c2's rebind at %s: %d replica %q; want 307 to its move's target %s", other.name, resp.StatusCode, resp.Header.Get(protocol.HeaderReplica), idle.ID)
	}
	rebound := time.Now()

	// The leader hears of it: its analyzer completes the move...
	for done := false; !done; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the leader's events ended")
			}
			d, _ := ev.Data.(map[string]any)
			done = ev.Type == "binding" && d["client"] == "c2" && d["replica"] == idle.ID && d["elsewhere"] == true
		case <-ctx.Done():
			t.Fatal("the leader never heard that c2 bound at another instance")
		}
	}
	until(t, 2*interval, "c2's move no longer pending at the leader", func() bool {
		return !slices.Contains(lead.b.PlannedClients(clusterGroup), "c2")
	})
	// ... and deletes its key, long before the lease (8 s) would end it.
	until(t, 2*interval, "c2's move deleted from etcd", func() bool {
		_, ok, err := other.moves.Lookup(ctx, clusterGroup, "c2")
		return err == nil && !ok
	})
	if since := time.Since(planned); since >= 4*interval {
		t.Fatalf("the move was completed %v after it was planned (%v after the rebind): no sooner than its expiry (%v)", since, time.Since(rebound), 4*interval)
	}
}
