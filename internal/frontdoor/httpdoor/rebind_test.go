package httpdoor

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// lookups is a LookupMove that answers from a table and counts its calls.
type lookups struct {
	moves map[string]string
	calls atomic.Int64
}

func (l *lookups) lookup(_ context.Context, client string) (string, bool) {
	l.calls.Add(1)
	id, ok := l.moves[client]
	return id, ok
}

// TestRedirectLooksUpMove: a client coming back with Fulcrum-Rebind that
// the snapshot has no move for goes to the replica its looked-up move
// names, and the move is reported bound; ordinary bindings, clients with a
// move in the snapshot and moves to a replica that cannot take the client
// do not use the lookup's answer.
func TestRedirectLooksUpMove(t *testing.T) {
	t.Parallel()
	l := &lookups{moves: map[string]string{"mover": "r3", "to-draining": "r2", "to-unknown": "r9", "planned": "r3"}}
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{
		{id: "r1", url: "http://10.0.0.1:1"},
		{id: "r2", url: "http://10.0.0.2:2", state: protocol.StateDraining},
		{id: "r3", url: "http://10.0.0.3:3"},
	}, planned: map[string]string{"planned": "r1"}, picker: newFirst, lookup: l.lookup})
	fd := startFrontDoor(t, g, Options{})
	c := noFollow(t)

	for _, tc := range []struct {
		name, client  string
		hdr           []string
		replica       string
		calls         int64 // lookups made so far
		moveBound     bool
		wantRebinding bool
	}{
		{"looked-up move", "mover", []string{protocol.HeaderRebind, "1", protocol.HeaderBinding, "g/r1"}, "r3", 1, true, true},
		{"looked-up move, unreachable replica left", "mover", []string{protocol.HeaderRebind, protocol.RebindUnreachable, protocol.HeaderBinding, "g/r1"}, "r3", 2, true, true},
		{"not a rebind: no lookup", "mover", nil, "r1", 2, false, false},
		{"bound elsewhere without rebind: no lookup", "mover", []string{protocol.HeaderBinding, "g/r1"}, "r1", 2, false, false},
		{"move in the snapshot: no lookup", "planned", []string{protocol.HeaderRebind, "1", protocol.HeaderBinding, "g/r3"}, "r1", 2, false, true},
		{"move to a draining replica", "to-draining", []string{protocol.HeaderRebind, "1"}, "r1", 3, false, true},
		{"move to an unknown replica", "to-unknown", []string{protocol.HeaderRebind, "1"}, "r1", 4, false, true},
		{"no move", "nobody", []string{protocol.HeaderRebind, "1"}, "r1", 5, false, true},
	} {
		hdr := append([]string{protocol.HeaderClient, tc.client}, tc.hdr...)
		res, _ := do(t, c, "GET", fd.url+"/x", "", hdr...)
		if res.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("%s: status %d", tc.name, res.StatusCode)
		}
		if got := res.Header.Get(protocol.HeaderReplica); got != tc.replica {
			t.Errorf("%s: went to %q, want %s", tc.name, got, tc.replica)
		}
		if n := l.calls.Load(); n != tc.calls {
			t.Errorf("%s: %d lookups so far, want %d", tc.name, n, tc.calls)
		}
		if tc.moveBound {
			if ev := recv(t, g.moveBound, "MoveBound"); ev != (boundEvent{tc.replica, tc.client, true}) {
				t.Errorf("%s: MoveBound(%+v), want %s/%s", tc.name, ev, tc.replica, tc.client)
			}
		}
		if ev := recv(t, g.bound, "Bound"); ev.replica != tc.replica || ev.client != tc.client || ev.moved != tc.wantRebinding {
			t.Errorf("%s: Bound(%+v), want %s/%s moved=%v", tc.name, ev, tc.replica, tc.client, tc.wantRebinding)
		}
		select {
		case ev := <-g.moveBound:
			t.Errorf("%s: MoveBound(%+v) of a binding not by a looked-up move", tc.name, ev)
		default:
		}
	}
}

// TestRedirectLookupAvoidsUnreachable: a looked-up move to the replica the
// client could not reach is not followed.
func TestRedirectLookupAvoidsUnreachable(t *testing.T) {
	t.Parallel()
	l := &lookups{moves: map[string]string{"mover": "r1"}}
	g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{
		{id: "r1", url: "http://10.0.0.1:1"}, {id: "r2", url: "http://10.0.0.2:2"},
	}, picker: newFirst, lookup: l.lookup})
	fd := startFrontDoor(t, g, Options{})
	res, _ := do(t, noFollow(t), "GET", fd.url+"/x", "", protocol.HeaderClient, "mover",
		protocol.HeaderRebind, protocol.RebindUnreachable, protocol.HeaderBinding, "g/r1")
	if got := res.Header.Get(protocol.HeaderReplica); got != "r2" {
		t.Errorf("went to %q, want r2 (r1 is the replica it could not reach)", got)
	}
	if ev := recv(t, g.bound, "Bound"); ev.replica != "r2" {
		t.Errorf("Bound(%+v), want r2", ev)
	}
	select {
	case ev := <-g.moveBound:
		t.Errorf("MoveBound(%+v) for a move that was not followed", ev)
	default:
	}
}

// TestRedirectLookupBounded: a lookup that does not answer in time, one
// that even ignores its deadline, and one that fails leave the client to
// the picker within the bound (MoveLookupTimeout); the lookup is given a
// deadline no later than the bound.
func TestRedirectLookupBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	deadlines := make(chan time.Duration, 10)
	for _, tc := range []struct {
		name   string
		lookup func(ctx context.Context, client string) (string, bool)
		slow   bool
		// deadline: the lookup sends how far its deadline is.
		deadline bool
	}{
		{"slow, gives up at its deadline", func(ctx context.Context, _ string) (string, bool) {
			d, _ := ctx.Deadline()
			deadlines <- time.Until(d)
			<-ctx.Done()
			return "r2", true
		}, true, true},
		{"slow, ignores its deadline", func(ctx context.Context, _ string) (string, bool) {
			<-release
			return "r2", true
		}, true, false},
		{"fails", func(context.Context, string) (string, bool) { return "", false }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGroup(groupConfig{binding: protocol.OnDemand, members: []spec{
				{id: "r1", url: "http://10.0.0.1:1"}, {id: "r2", url: "http://10.0.0.2:2"},
			}, picker: newFirst, lookup: tc.lookup})
			fd := startFrontDoor(t, g, Options{})
			c := noFollow(t)
			start := time.Now()
			res, _ := do(t, c, "GET", fd.url+"/x", "", protocol.HeaderClient, "mover", protocol.HeaderRebind, "1")
			took := time.Since(start)
			t.Logf("answered after %v", took.Round(time.Millisecond))
			if got := res.Header.Get(protocol.HeaderReplica); got != "r1" {
				t.Errorf("went to %q, want the picker's r1", got)
			}
			if took >= time.Second {
				t.Errorf("answered after %v, want about %v at most (bound 1s)", took, frontdoor.MoveLookupTimeout)
			}
			if tc.slow && took < frontdoor.MoveLookupTimeout {
				t.Errorf("answered after %v, before the lookup's bound %v: did it wait at all?", took, frontdoor.MoveLookupTimeout)
			}
			if ev := recv(t, g.bound, "Bound"); ev != (boundEvent{"r1", "mover", true}) {
				t.Errorf("Bound(%+v), want r1/mover/moved", ev)
			}
			if tc.deadline {
				if d := recv(t, deadlines, "the lookup's deadline"); d > frontdoor.MoveLookupTimeout {
					t.Errorf("lookup's deadline %v away, want at most %v", d, frontdoor.MoveLookupTimeout)
				}
			}
		})
	}
}
