package giopdoor_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// bindings sums the group's binding counters per replica id.
func bindings(t *testing.T, b *balancer.Balancer, group string) map[string]uint64 {
	t.Helper()
	st, err := b.Group(group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, r := range st.Replicas {
		out[r.ID] = r.Counters.Bindings
		if r.Counters.Bindings != r.Counters.Redirected {
			t.Errorf("replica %s: %d bindings but %d redirects", r.ID, r.Counters.Bindings, r.Counters.Redirected)
		}
	}
	return out
}

// TestOnDemandForward sends a Request for the group in every GIOP version
// and byte order: each is answered LOCATION_FORWARD, in its version and
// order, with a replica's registered IOR (type kept), round-robin; the
// forwarded reference then serves the call.
func TestOnDemandForward(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := giopGroup(t, b, protocol.Group{})
	refs := map[string]ior.IOR{}
	for range 3 {
		ref := startPrime(t)
		refs[register(t, b, "g", ref.String())] = ref
	}
	c := dial(t, fd)
	seen := map[string]int{}
	id := uint32(100)
	for _, v := range versions {
		for _, o := range orders {
			id++
			c.send(isPrimeRequest(v, o, id, "g", 7919))
			rep, ok := c.recv().(*giop.Reply)
			if !ok {
				t.Fatalf("%v %v: answer is not a Reply", v, o)
			}
			if rep.Version != v || rep.Order != o || rep.RequestID != id || rep.Status != giop.StatusLocationForward {
				t.Fatalf("%v %v: reply %v %v id %d status %v", v, o, rep.Version, rep.Order, rep.RequestID, rep.Status)
			}
			fw, err := rep.Forward()
			if err != nil {
				t.Fatal(err)
			}
			var rid string
			for k, r := range refs {
				if fw.String() == r.String() {
					rid = k
				}
			}
			if rid == "" || fw.TypeID != giop.PrimeRepoID {
				t.Fatalf("%v %v: forwarded to %s (type %q), not a registered replica", v, o, fw.String(), fw.TypeID)
			}
			seen[rid]++
			// The client follows the forward.
			p, _ := fw.IIOP()
			rc := dial(t, p.Address().HostPort())
			rc.send(isPrimeRequest(v, o, id, string(p.ObjectKey), 7919))
			res, ok := rc.recv().(*giop.Reply)
			if !ok || res.Status != giop.StatusNoException {
				t.Fatalf("%v %v: the replica answered %+v", v, o, res)
			}
			if yes, err := res.BooleanResult(); err != nil || !yes {
				t.Fatalf("%v %v: is_prime(7919) = %v, %v", v, o, yes, err)
			}
		}
	}
	// Round-robin over three replicas: six bindings, two each.
	for rid := range refs {
		if seen[rid] != 2 {
			t.Errorf("replica %s got %d forwards, want 2 (round-robin): %v", rid, seen[rid], seen)
		}
	}
	got := bindings(t, b, "g")
	for rid := range refs {
		if got[rid] != 2 {
			t.Errorf("replica %s counted %d bindings, want 2: %v", rid, got[rid], got)
		}
	}
}

// TestOnDemandTargets: a GIOP 1.2 Request may name the group by its key,
// a profile or a whole reference.
func TestOnDemandTargets(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := giopGroup(t, b, protocol.Group{})
	register(t, b, "g", startPrime(t).String())
	st, _ := b.Group("g")
	group, err := ior.Parse(st.Reference.IOR)
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := group.IIOP()
	targets := []giop.TargetAddress{
		giop.KeyTarget([]byte("g")),
		{Disposition: giop.ProfileAddr, Profile: prof},
		{Disposition: giop.ReferenceAddr, Reference: giop.IORAddressingInfo{IOR: group}},
	}
	c := dial(t, fd)
	for i, tg := range targets {
		req := isPrimeRequest(giop.V12, cdr.LittleEndian, uint32(i), "g", 3)
		req.Target = tg
		c.send(req)
		if rep, ok := c.recv().(*giop.Reply); !ok || rep.Status != giop.StatusLocationForward {
			t.Errorf("%v target: answer %+v, want LOCATION_FORWARD", tg.Disposition, rep)
		}
	}
}

// TestLocateAnswers: LocateRequest for the group is OBJECT_FORWARD by
// default and OBJECT_HERE with giop.locate here (then the Request is
// forwarded); both answer in the client's version and order.
func TestLocateAnswers(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := giopGroup(t, b, protocol.Group{})
	ref := startPrime(t)
	rid := register(t, b, "g", ref.String())
	c := dial(t, fd)
	id := uint32(0)
	for _, v := range versions {
		for _, o := range orders {
			id++
			c.send(&giop.LocateRequest{Envelope: env(v, o), RequestID: id, Target: giop.KeyTarget([]byte("g"))})
			rep, ok := c.recv().(*giop.LocateReply)
			if !ok || rep.Version != v || rep.Order != o || rep.RequestID != id || rep.Status != giop.LocateObjectForward {
				t.Fatalf("%v %v: locate answered %+v, want OBJECT_FORWARD", v, o, rep)
			}
			if fw, err := rep.Forward(); err != nil || fw.String() != ref.String() {
				t.Fatalf("%v %v: OBJECT_FORWARD to %v (%v), want the replica", v, o, fw, err)
			}
		}
	}
	if n := bindings(t, b, "g")[rid]; n != 6 {
		t.Errorf("%d bindings after 6 forwarding locates, want 6", n)
	}

	st, _ := b.Group("g")
	st.Group.GIOP.Locate = protocol.LocateHere
	if _, _, err := b.PutGroup(st.Group); err != nil {
		t.Fatal(err)
	}
	c.send(&giop.LocateRequest{Envelope: env(giop.V12, cdr.BigEndian), RequestID: 50, Target: giop.KeyTarget([]byte("g"))})
	if rep, ok := c.recv().(*giop.LocateReply); !ok || rep.Status != giop.LocateObjectHere || rep.RequestID != 50 {
		t.Fatalf("locate here answered %+v, want OBJECT_HERE", rep)
	}
	if n := bindings(t, b, "g")[rid]; n != 6 {
		t.Errorf("OBJECT_HERE counted a binding: %d, want 6", n)
	}
	c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 51, "g", 5))
	if rep, ok := c.recv().(*giop.Reply); !ok || rep.Status != giop.StatusLocationForward {
		t.Fatalf("request after OBJECT_HERE answered %+v, want LOCATION_FORWARD", rep)
	}
}

// TestUnknownKey: keys that are not the group's get OBJECT_NOT_EXIST and
// UNKNOWN_OBJECT.
func TestUnknownKey(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	for _, binding := range []string{protocol.OnDemand, protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			name := "k-" + binding
			fd := giopGroup(t, b, protocol.Group{Name: name, Binding: binding})
			register(t, b, name, startPrime(t).String())
			c := dial(t, fd)
			for i, v := range versions {
				c.send(isPrimeRequest(v, cdr.BigEndian, uint32(i), "nope", 3))
				rep, ok := c.recv().(*giop.Reply)
				if !ok || rep.Status != giop.StatusSystemException {
					t.Fatalf("%v: answer %+v, want SYSTEM_EXCEPTION", v, rep)
				}
				if ex, err := rep.SystemException(); err != nil || ex.RepositoryID != giop.RepoIDObjectNotExist || ex.Completed != giop.CompletedNo {
					t.Fatalf("%v: exception %+v (%v), want OBJECT_NOT_EXIST COMPLETED_NO", v, ex, err)
				}
				c.send(&giop.LocateRequest{Envelope: env(v, cdr.LittleEndian), RequestID: 9, Target: giop.KeyTarget([]byte("nope"))})
				if lr, ok := c.recv().(*giop.LocateReply); !ok || lr.Status != giop.LocateUnknownObject || lr.Order != cdr.LittleEndian {
					t.Fatalf("%v: locate answered %+v, want UNKNOWN_OBJECT", v, lr)
				}
			}
		})
	}
}

// TestNoReplica: with nothing to pick, a Request gets TRANSIENT at once, a
// GIOP 1.2 LocateRequest LOC_SYSTEM_EXCEPTION TRANSIENT, older ones
// OBJECT_HERE (so that their Request gets the TRANSIENT).
func TestNoReplica(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := giopGroup(t, b, protocol.Group{})
	c := dial(t, fd)
	for i, v := range versions {
		c.send(isPrimeRequest(v, cdr.LittleEndian, uint32(i), "g", 3))
		rep, ok := c.recv().(*giop.Reply)
		if !ok || rep.Status != giop.StatusSystemException {
			t.Fatalf("%v: answer %+v, want SYSTEM_EXCEPTION", v, rep)
		}
		if ex, _ := rep.SystemException(); ex.RepositoryID != giop.RepoIDTransient || ex.Completed != giop.CompletedNo {
			t.Fatalf("%v: exception %+v, want TRANSIENT COMPLETED_NO", v, ex)
		}
		c.send(&giop.LocateRequest{Envelope: env(v, cdr.BigEndian), RequestID: 7, Target: giop.KeyTarget([]byte("g"))})
		lr, ok := c.recv().(*giop.LocateReply)
		if !ok {
			t.Fatalf("%v: locate not answered with a LocateReply", v)
		}
		if v == giop.V12 {
			ex, err := lr.SystemException()
			if lr.Status != giop.LocateSystemException || err != nil || ex.RepositoryID != giop.RepoIDTransient {
				t.Fatalf("1.2 locate: %v %+v %v, want LOC_SYSTEM_EXCEPTION TRANSIENT", lr.Status, ex, err)
			}
		} else if lr.Status != giop.LocateObjectHere {
			t.Fatalf("%v locate: %v, want OBJECT_HERE", v, lr.Status)
		}
	}
}

// TestORBThroughFrontDoor: a client ORB given the group's corbaloc
// reference is forwarded to a replica once and then talks to it directly,
// with or without a LocateRequest first, in every version.
func TestORBThroughFrontDoor(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	giopGroup(t, b, protocol.Group{})
	for range 2 {
		register(t, b, "g", startPrime(t).String())
	}
	st, _ := b.Group("g")
	for _, locate := range []bool{false, true} {
		for _, v := range versions {
			for _, o := range orders {
				name := fmt.Sprintf("locate=%v/%v/%v", locate, v, o)
				o2, err := orb.New(orb.Options{Version: v, Order: o, Locate: locate})
				if err != nil {
					t.Fatal(err)
				}
				obj, err := o2.Resolve("corbaloc:iiop:1.2@" + st.Listening + "/g")
				if err != nil {
					t.Fatal(err)
				}
				prime := orb.Prime{Object: obj}
				for _, n := range []int32{7919, 7917, 2} {
					yes, _, err := prime.IsPrime(context.Background(), n)
					if err != nil || yes != (n != 7917) {
						t.Fatalf("%s: is_prime(%d) = %v, %v", name, n, yes, err)
					}
				}
				if !obj.Forwarded() {
					t.Errorf("%s: the object was not forwarded to a replica", name)
				}
				o2.Close()
			}
		}
	}
	total := uint64(0)
	for _, n := range bindings(t, b, "g") {
		total += n
	}
	// One binding per client ORB: the later calls went to the replica.
	if total != 12 {
		t.Errorf("%d bindings for 12 clients, want 12", total)
	}
}

// TestProtocolSwitch: replacing an http group with a giop one at run time
// starts a GIOP front door in place of the HTTP one.
func TestProtocolSwitch(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	if _, _, err := b.PutGroup(protocol.Group{Name: "sw", FrontDoor: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	st, _, err := b.PutGroup(protocol.Group{Name: "sw", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0", Strategy: "round-robin"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Reference == nil {
		t.Fatal("the switched group has no reference")
	}
	register(t, b, "sw", startPrime(t).String())
	c := dial(t, st.Listening)
	c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 1, "sw", 3))
	if rep, ok := c.recv().(*giop.Reply); !ok || rep.Status != giop.StatusLocationForward {
		t.Fatalf("answer %+v, want LOCATION_FORWARD", rep)
	}
}
