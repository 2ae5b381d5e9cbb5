package balancer_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestOnlyOnDemandMovesClients feeds the same load script to a
// least-loaded group in each binding mode: replica a reports 100 (clients
// c1 at 60, c2 at 40), replica b reports 10 (c3). On demand, a gets a high
// advisory naming the client to move, and that client, back at the front
// door, is bound to b and the move completes; per-session and per-request
// groups never get a high advisory. Each in a synctest bubble
// (bubble_test.go).
func TestOnlyOnDemandMovesClients(t *testing.T) {
	t.Parallel()
	for _, binding := range []string{protocol.OnDemand, protocol.PerSession, protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { testOnlyOnDemandMovesClients(t, binding) })
		})
	}
}

func testOnlyOnDemandMovesClients(t *testing.T, binding string) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	st := e.mustPutGroup(protocol.Group{Name: "mv", Binding: binding, Strategy: strategy.LeastLoadedName, ReportInterval: ms(20)})
	a := e.mustRegister("mv", "http://127.0.0.1:9001")
	b := e.mustRegister("mv", "http://127.0.0.1:9002")
	events := e.subscribe("mv")
	reportA := protocol.Report{Load: 100, Clients: []protocol.ClientRate{{ID: "c1", Rate: 60}, {ID: "c2", Rate: 40}}}
	reportB := protocol.Report{Load: 10, Clients: []protocol.ClientRate{{ID: "c3", Rate: 10}}}

	var high protocol.Advisory
	for range 15 {
		if adv := e.mustReport(a.Token, reportA); adv.Advisory == protocol.High {
			high = adv
			break
		}
		e.mustReport(b.Token, reportB)
		waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(map[string]stepReplica) error { return nil }))
		if adv := e.mustReport(b.Token, reportB); adv.Advisory == protocol.High {
			t.Fatalf("the least loaded replica got %+v", adv)
		}
	}
	if binding != protocol.OnDemand {
		if high.Advisory != "" {
			t.Fatalf("a %s group got %+v; only on-demand groups move clients", binding, high)
		}
		if got := replicaOf(t, e.mustGroup("mv"), a.ID).Advisory; got != protocol.Nominal {
			t.Errorf("status advisory of a %s group: %s, want nominal", binding, got)
		}
		return
	}
	if high.Advisory != protocol.High || !slices.Equal(high.Clients, []string{"c2"}) || high.Shed <= 0 {
		t.Fatalf("loaded replica's advisory %+v, want high naming c2", high)
	}
	// The move is in the published snapshot once a step has run.
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(map[string]stepReplica) error { return nil }))

	c := memClient(t, n)
	req, err := http.NewRequest(http.MethodGet, st.Advertise+"/work", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(protocol.HeaderClient, "c2")
	req.Header.Set(protocol.HeaderBinding, "mv/"+a.ID)
	req.Header.Set(protocol.HeaderRebind, "1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(protocol.HeaderReplica); resp.StatusCode != http.StatusTemporaryRedirect || got != b.ID {
		t.Fatalf("moved client at the front door: %s to %q, want 307 to %s", resp.Status, got, b.ID)
	}
	waitEvent(t, events, 5*time.Second, func(ev balancer.Event) error {
		d, _ := ev.Data.(map[string]any)
		if ev.Type != "binding" || d["client"] != "c2" || d["replica"] != b.ID || d["planned"] != true {
			return fmt.Errorf("%s event %v, want the planned binding of c2 to %s", ev.Type, ev.Data, b.ID)
		}
		return nil
	})
	if got := replicaOf(t, e.mustGroup("mv"), b.ID).Counters; got.Bindings != 1 || got.Rebinds != 1 {
		t.Errorf("counters of the replica the client moved to: %+v, want 1 binding, a rebind", got)
	}
}
