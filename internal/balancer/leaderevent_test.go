package balancer_test

import (
	"context"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Every instance appends a "leader" event when it sees the group's
// analyzer leader change: the first leader on both instances, then, when
// the leader stops, the survivor naming itself with a newer term. A
// single node appends none.
func TestLeaderEvent(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	a, b := c.start("fulcrum-a"), c.start("fulcrum-b")
	if _, _, err := a.b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval)}); err != nil {
		t.Fatal(err)
	}
	lead, term := c.leaderNode(0)
	for _, n := range []*clusterNode{a, b} {
		ev := waitLeaderEvent(t, n.b, 0, func(l string, tm int64) bool { return l != "" })
		if l, tm := leaderOf(t, ev); l != lead.name || tm != term || ev.Group != clusterGroup || ev.Instance != "" {
			t.Fatalf("%s: first leader event %+v, want group %s led by %s in term %d, told by the instance itself", n.name, ev, clusterGroup, lead.name, term)
		}
	}
	survivor := a
	if lead == a {
		survivor = b
	}
	_, after, _, _ := survivor.b.EventsSince(0)
	lead.stop()
	ev := waitLeaderEvent(t, survivor.b, after, func(l string, tm int64) bool { return l == survivor.name })
	if l, tm := leaderOf(t, ev); tm <= term {
		t.Fatalf("%s: leader event after %s stopped: %s in term %d, want a term above %d", survivor.name, lead.name, l, tm, term)
	}

	// A single node: no leader events.
	e := newEnv(t, envOptions{instance: "solo"})
	e.mustPutGroup(protocol.Group{Name: "prime", ReportInterval: ms(20)})
	events := e.subscribe("prime")
	waitEvent(t, events, 5*time.Second, func(ev balancer.Event) error {
		if ev.Type == "step" {
			return nil
		}
		return errStr("not a step")
	})
	evs, _, _, _ := e.b.EventsSince(0)
	for _, ev := range evs {
		if ev.Type == "leader" {
			t.Errorf("a single node appended a leader event: %+v", ev)
		}
	}
}

type errStr string

func (e errStr) Error() string { return string(e) }

// waitLeaderEvent waits for a "leader" event after seq after in b's log
// whose leader and term match.
func waitLeaderEvent(t *testing.T, b *balancer.Balancer, after uint64, match func(leader string, term int64) bool) balancer.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*clusterTTL)
	defer cancel()
	for {
		evs, last, ok, next := b.EventsSince(after)
		if !ok {
			t.Fatalf("events after %d are no longer kept", after)
		}
		for _, ev := range evs {
			if ev.Type != "leader" {
				continue
			}
			if l, tm := leaderOf(t, ev); match(l, tm) {
				return ev
			}
		}
		after = last
		select {
		case <-next:
		case <-ctx.Done():
			t.Fatalf("no matching leader event within %v", 4*clusterTTL)
		}
	}
}

// leaderOf reads a leader event's leader and term.
func leaderOf(t *testing.T, ev balancer.Event) (string, int64) {
	t.Helper()
	d, ok := ev.Data.(map[string]any)
	if !ok {
		t.Fatalf("leader event data %T, want a map", ev.Data)
	}
	l, _ := d["leader"].(string)
	tm, ok := d["term"].(int64)
	if !ok {
		t.Fatalf("leader event %v: term %T, want int64", d, d["term"])
	}
	return l, tm
}
