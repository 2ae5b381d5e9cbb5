package giopdoor_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestLocateProbe: the GIOP health probe is a LocateRequest for the
// replica's key, answered OBJECT_HERE by a live object.
func TestLocateProbe(t *testing.T) {
	t.Parallel()
	s := startServant(t, "obj")
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := giopdoor.Locate(ctx, nil, s.ref); err != nil {
		t.Fatalf("Locate(live object) = %v", err)
	}
	gone := s.ref
	p, _ := gone.IIOP()
	p.ObjectKey = []byte("other")
	gone.Profiles = []ior.Profile{p}
	if err := giopdoor.Locate(ctx, nil, gone); err == nil || !strings.Contains(err.Error(), "UNKNOWN_OBJECT") {
		t.Fatalf("Locate(unknown key) = %v, want UNKNOWN_OBJECT", err)
	}
	s.stop()
	if err := giopdoor.Locate(ctx, nil, s.ref); err == nil {
		t.Fatal("Locate(stopped servant) = nil")
	}
	// A peer that accepts and never answers is bounded by ctx.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	silent := s.ref.WithAddress("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port))
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if err := giopdoor.Locate(short, nil, silent); err == nil {
		t.Fatal("Locate(silent peer) = nil")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Locate outlived its context by %v", d)
	}
}

// TestHealthProbesTakeReplicasOut: a GIOP group probes its replicas with
// LocateRequests; one that stops answering goes down and gets no more
// clients, and comes back once it answers again.
func TestHealthProbesTakeReplicasOut(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	// The stopped replica refuses connections at once; three probes in a
	// row must fail, so that a loaded machine that delays one probe of the
	// live replica does not take it down too.
	fd := giopGroup(t, b, protocol.Group{Health: protocol.Health{
		Interval: protocol.Duration(100 * time.Millisecond), Timeout: protocol.Duration(100 * time.Millisecond), Rise: 1, Fall: 3}})
	live, dying := startServant(t, "a"), startServant(t, "b")
	register(t, b, "g", live.ref.String())
	dead := register(t, b, "g", dying.ref.String())
	state := func() string {
		st, _ := b.Group("g")
		for _, r := range st.Replicas {
			if r.ID == dead {
				return r.State
			}
		}
		return ""
	}
	dying.stop()
	untilEvent(t, b, "g", "the stopped replica is down", func() bool { return state() == protocol.StateDown })
	c := dial(t, fd)
	for i := range 4 {
		c.send(isPrimeRequest(giop.V12, cdr.BigEndian, uint32(i), "g", 3))
		rep, ok := c.recv().(*giop.Reply)
		if !ok || rep.Status != giop.StatusLocationForward {
			t.Fatalf("answer %+v, want LOCATION_FORWARD", rep)
		}
		if fw, _ := rep.Forward(); fw.String() != live.ref.String() {
			t.Fatalf("forwarded to %s, want the live replica", fw.String())
		}
	}
}

// TestCorbalocReplicaTyped: a replica registered by corbaloc URL is
// forwarded to with the group's type id (its typed neighbour's).
func TestCorbalocReplicaTyped(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := giopGroup(t, b, protocol.Group{})
	typed, plain := startServant(t, "a"), startServant(t, "b")
	register(t, b, "g", typed.ref.String())
	p, _ := plain.ref.IIOP()
	register(t, b, "g", "corbaloc:iiop:1.2@"+p.Address().HostPort()+"/b")
	c := dial(t, fd)
	seen := 0
	for i := range 2 {
		c.send(isPrimeRequest(giop.V12, cdr.BigEndian, uint32(i), "g", 3))
		rep, _ := c.recv().(*giop.Reply)
		fw, err := rep.Forward()
		if err != nil {
			t.Fatal(err)
		}
		if fw.TypeID != giop.PrimeRepoID {
			t.Errorf("forwarded reference has type %q, want %q", fw.TypeID, giop.PrimeRepoID)
		}
		if fp, _ := fw.IIOP(); string(fp.ObjectKey) == "b" {
			seen++
		}
	}
	if seen != 1 {
		t.Errorf("the corbaloc replica was picked %d times of 2 (round-robin)", seen)
	}
}
