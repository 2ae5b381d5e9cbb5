package giopdoor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func perRequest(t *testing.T, b *balancer.Balancer, gs protocol.Group) string {
	t.Helper()
	gs.Binding = protocol.PerRequest
	return giopGroup(t, b, gs)
}

// proxied is the group's proxied-call counter per replica.
func proxied(t *testing.T, b *balancer.Balancer, group string) map[string]uint64 {
	t.Helper()
	st, err := b.Group(group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, r := range st.Replicas {
		out[r.ID] = r.Counters.Proxied
	}
	return out
}

// TestProxyAcrossReplicas carries concurrent calls from several client
// ORBs (one connection each), in every GIOP version and byte order, across
// three Prime replicas: every answer is right (so request ids were remapped
// and replies routed back to their callers), every replica took calls, and
// the clients were never forwarded.
func TestProxyAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := perRequest(t, b, protocol.Group{})
	for range 3 {
		register(t, b, "g", startPrime(t).String())
	}
	type client struct {
		o   *orb.ORB
		obj *orb.Object
	}
	var clients []client
	for _, v := range versions {
		for _, o := range orders {
			ob, err := orb.New(orb.Options{Version: v, Order: o})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ob.Close() })
			obj, err := ob.Resolve("corbaloc:iiop:1.2@" + fd + "/g")
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, client{ob, obj})
		}
	}
	const perClient, goroutines = 20, 4
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*goroutines)
	for ci, c := range clients {
		for gi := range goroutines {
			wg.Go(func() {
				prime := orb.Prime{Object: c.obj}
				for i := range perClient {
					n := int32(1000 + 97*ci + 13*gi + i)
					got, _, err := prime.IsPrime(context.Background(), n)
					if err != nil {
						errs <- fmt.Errorf("client %d: is_prime(%d): %w", ci, n, err)
						return
					}
					if got != backend.IsPrime(uint64(n)) {
						errs <- fmt.Errorf("client %d: is_prime(%d) = %v, wrong (a reply routed to the wrong call?)", ci, n, got)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, c := range clients {
		if c.obj.Forwarded() {
			t.Errorf("client %d was forwarded in per-request mode", i)
		}
	}
	total := uint64(0)
	for id, n := range proxied(t, b, "g") {
		if n == 0 {
			t.Errorf("replica %s took no calls", id)
		}
		total += n
	}
	if want := uint64(len(clients) * goroutines * perClient); total != want {
		t.Errorf("%d calls proxied, want %d", total, want)
	}
}

// TestProxyRemapsIDs: two clients using the same request id at once reach
// the same replica under different ids, and each gets its own answer.
func TestProxyRemapsIDs(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	s := startServant(t, "obj")
	hold := make(chan struct{})
	s.hold.Store(&hold)
	fd := perRequest(t, b, protocol.Group{})
	register(t, b, "g", s.ref.String())
	c1, c2 := dial(t, fd), dial(t, fd)
	// One after the other, so that both share the pooled connection.
	c1.send(isPrimeRequest(giop.V12, cdr.BigEndian, 5, "g", 7))
	a := recvN(t, s.seen, "first request")
	c2.send(isPrimeRequest(giop.V12, cdr.LittleEndian, 5, "g", 8))
	bb := recvN(t, s.seen, "second request")
	if a == bb {
		t.Fatalf("both calls reached the replica as request %d", a)
	}
	close(hold)
	for _, tc := range []struct {
		c    *rawClient
		want bool
		o    cdr.ByteOrder
	}{{c1, true, cdr.BigEndian}, {c2, false, cdr.LittleEndian}} {
		rep, ok := tc.c.recv().(*giop.Reply)
		if !ok || rep.RequestID != 5 || rep.Order != tc.o || rep.Status != giop.StatusNoException {
			t.Fatalf("answer %+v, want a NO_EXCEPTION reply to request 5", rep)
		}
		if got, _ := rep.BooleanResult(); got != tc.want {
			t.Errorf("result %v, want %v", got, tc.want)
		}
	}
}

// TestProxyCloseConnectionRetried: a replica that closes its connection
// with CloseConnection instead of answering did not run the call, which is
// sent again and answered.
func TestProxyCloseConnectionRetried(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	s := startServant(t, "obj")
	s.closeNext.Store(1)
	fd := perRequest(t, b, protocol.Group{})
	register(t, b, "g", s.ref.String())
	c := dial(t, fd)
	c.send(isPrimeRequest(giop.V11, cdr.BigEndian, 1, "g", 13))
	rep, ok := c.recv().(*giop.Reply)
	if !ok || rep.Status != giop.StatusNoException {
		t.Fatalf("answer %+v, want NO_EXCEPTION after the replica's CloseConnection", rep)
	}
	if got, _ := rep.BooleanResult(); !got {
		t.Error("is_prime(13) = false")
	}
	if n := s.requests.Load(); n != 2 {
		t.Errorf("the replica saw %d requests, want 2 (the closed one and its retry)", n)
	}
}

// TestProxyReplicaForwardRepicks: a replica answering LOCATION_FORWARD (a
// draining replica's side-car) has the call sent to another replica; the
// client never sees the forward.
func TestProxyReplicaForwardRepicks(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fwd, ok := startServant(t, "a"), startServant(t, "b")
	fd := perRequest(t, b, protocol.Group{})
	st, _ := b.Group("g")
	group, _ := giopRef(st)
	fwd.forward.Store(&group)
	register(t, b, "g", fwd.ref.String())
	register(t, b, "g", ok.ref.String())
	c := dial(t, fd)
	for i := range 6 {
		c.send(isPrimeRequest(giop.V12, cdr.BigEndian, uint32(i), "g", 17))
		rep, isReply := c.recv().(*giop.Reply)
		if !isReply || rep.Status != giop.StatusNoException || rep.RequestID != uint32(i) {
			t.Fatalf("call %d answered %+v, want NO_EXCEPTION", i, rep)
		}
	}
	if fwd.requests.Load() == 0 {
		t.Error("the forwarding replica was never picked (round-robin should pick it)")
	}
	if n := ok.requests.Load(); n != 6 {
		t.Errorf("the serving replica answered %d calls, want all 6", n)
	}
}

// TestProxyCancelForwarded: a client's CancelRequest reaches the replica
// with the id the replica saw for the request.
func TestProxyCancelForwarded(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	s := startServant(t, "obj")
	hold := make(chan struct{})
	s.hold.Store(&hold)
	defer close(hold)
	fd := perRequest(t, b, protocol.Group{})
	register(t, b, "g", s.ref.String())
	c := dial(t, fd)
	c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 77, "g", 19))
	upID := recvN(t, s.seen, "the request")
	c.send(&giop.CancelRequest{Envelope: env(giop.V12, cdr.BigEndian), RequestID: 77})
	if got := recvN(t, s.cancels, "the CancelRequest"); got != upID {
		t.Fatalf("CancelRequest for %d, want %d (the remapped id)", got, upID)
	}
	// The front door handles a connection's messages in order: once the
	// LocateRequest sent after the CancelRequest is answered, the
	// cancelled call has been released.
	c.send(&giop.LocateRequest{Envelope: env(giop.V12, cdr.BigEndian), RequestID: 78, Target: giop.KeyTarget([]byte("g"))})
	if rep, ok := c.recv().(*giop.LocateReply); !ok || rep.RequestID != 78 {
		t.Fatalf("answer to the LocateRequest: %+v", rep)
	}
	if st, _ := b.Group("g"); st.Replicas[0].Inflight != 0 {
		t.Errorf("%d calls in flight after the CancelRequest, want 0", st.Replicas[0].Inflight)
	}
}

// TestProxyOneway: oneway calls are passed on, in per-request and in
// on-demand mode (where no reply could carry a forward).
func TestProxyOneway(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	for _, binding := range []string{protocol.PerRequest, protocol.OnDemand} {
		s := startServant(t, "obj")
		fd := giopGroup(t, b, protocol.Group{Name: "o-" + binding, Binding: binding})
		register(t, b, "o-"+binding, s.ref.String())
		c := dial(t, fd)
		for i, v := range versions {
			req := isPrimeRequest(v, cdr.LittleEndian, uint32(i), "o-"+binding, int32(40+i))
			req.ResponseFlags = giop.FlagsOneway
			req.SetLongArg(int32(40 + i))
			c.send(req)
			if got := recvN(t, s.oneways, "a oneway call"); got != int32(40+i) {
				t.Errorf("%s %v: oneway arg %d, want %d", binding, v, got, 40+i)
			}
		}
		// The connection still serves two-way calls afterwards.
		c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 9, "o-"+binding, 23))
		if _, ok := c.recv().(*giop.Reply); !ok {
			t.Errorf("%s: no reply after oneway calls", binding)
		}
	}
}

// TestProxyFragments: fragmented requests (GIOP 1.2 interleaved with
// another call, and GIOP 1.1) are joined and forwarded whole.
func TestProxyFragments(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	s := startServant(t, "obj")
	fd := perRequest(t, b, protocol.Group{})
	register(t, b, "g", s.ref.String())
	c := dial(t, fd)

	// GIOP 1.2: the body starts 8-aligned; cut there, so that the first
	// message's total length is a multiple of 8, and send the long
	// argument as a fragment.
	for _, o := range orders {
		full := isPrimeRequest(giop.V12, o, 31, "g", 7919)
		whole, _ := giop.EncodeMessage(full)
		cut := full.BodyOffset
		if cut%8 != 0 || cut >= len(whole) {
			t.Fatalf("test setup: body at %d of %d", cut, len(whole))
		}
		first := append([]byte(nil), whole[:cut]...)
		first[6] |= 0x02
		setSize(first, cut-giop.HeaderSize)
		c.write(first)
		// Another call goes through while request 31 is incomplete.
		c.send(isPrimeRequest(giop.V12, o, 32, "g", 4))
		if rep, ok := c.recv().(*giop.Reply); !ok || rep.RequestID != 32 {
			t.Fatalf("%v: interleaved call answered %+v", o, rep)
		}
		c.send(&giop.Fragment{Envelope: env(giop.V12, o), RequestID: 31, Body: whole[cut:]})
		rep, ok := c.recv().(*giop.Reply)
		if !ok || rep.RequestID != 31 || rep.Status != giop.StatusNoException {
			t.Fatalf("%v: fragmented call answered %+v", o, rep)
		}
		if got, _ := rep.BooleanResult(); !got {
			t.Errorf("%v: is_prime(7919) through fragments = false", o)
		}
	}

	// GIOP 1.1: fragment data aligns relative to its own fragment, so the
	// cut falls where the bytes before are 4 modulo 8 (after an 8-aligned
	// prefix plus the 12-byte header).
	var whole []byte
	for pad := range 8 {
		req := &giop.Request{Envelope: env(giop.V11, cdr.BigEndian), RequestID: 41, ResponseFlags: giop.FlagsTwoway,
			Target: giop.KeyTarget([]byte("g")), Operation: giop.OpIsPrime, Principal: make([]byte, pad)}
		req.SetLongArg(104729)
		b, err := giop.EncodeMessage(req)
		if err != nil {
			t.Fatal(err)
		}
		if (len(b)-4)%8 == 4 {
			whole = b
			break
		}
	}
	cut := len(whole) - 4
	if whole == nil {
		t.Fatal("test setup: no principal length puts the argument at 4 modulo 8")
	}
	first := append([]byte(nil), whole[:cut]...)
	first[6] |= 0x02
	setSize(first, cut-giop.HeaderSize)
	c.write(first)
	c.send(&giop.Fragment{Envelope: env(giop.V11, cdr.BigEndian), Body: whole[cut:]})
	rep, ok := c.recv().(*giop.Reply)
	if !ok || rep.RequestID != 41 || rep.Status != giop.StatusNoException {
		t.Fatalf("1.1 fragmented call answered %+v", rep)
	}
	if got, _ := rep.BooleanResult(); !got {
		t.Error("is_prime(104729) through 1.1 fragments = false")
	}
}

// TestProxyLimits: max_inflight and the request timeout.
func TestProxyLimits(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	s := startServant(t, "obj")
	hold := make(chan struct{})
	s.hold.Store(&hold)
	defer close(hold)
	fd := perRequest(t, b, protocol.Group{MaxInflight: 1, Timeouts: protocol.Timeouts{Request: protocol.Duration(300 * time.Millisecond)}})
	register(t, b, "g", s.ref.String())
	c := dial(t, fd)
	c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 1, "g", 3))
	recvN(t, s.seen, "the first call")
	c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 2, "g", 3))
	rep, ok := c.recv().(*giop.Reply)
	if !ok || rep.RequestID != 2 {
		t.Fatalf("second call answered %+v, want an immediate reply", rep)
	}
	if ex, _ := rep.SystemException(); ex.RepositoryID != giop.RepoIDTransient || ex.Minor != giop.OMGVMCID|1 {
		t.Errorf("over max_inflight: %+v, want TRANSIENT minor 1", ex)
	}
	rep, ok = c.recv().(*giop.Reply)
	if !ok || rep.RequestID != 1 {
		t.Fatalf("held call answered %+v", rep)
	}
	if ex, _ := rep.SystemException(); ex.Name() != "TIMEOUT" || ex.Completed != giop.CompletedMaybe {
		t.Errorf("held call: %+v, want TIMEOUT COMPLETED_MAYBE", ex)
	}
	if got := recvN(t, s.cancels, "the CancelRequest after the timeout"); got == 0 {
		t.Error("cancel for request 0")
	}
	st, _ := b.Group("g")
	if st.Replicas[0].Counters.Failures == 0 {
		t.Error("the timeout was not observed as a failure")
	}
}

// TestProxyReplicaLost: a replica whose connection breaks with a call in
// flight gets COMM_FAILURE COMPLETED_MAYBE to the client (it may have run).
// GIOP requests carry no method to judge idempotent, so whatever the
// group's retry setting the call is never sent to another replica.
func TestProxyReplicaLost(t *testing.T) {
	t.Parallel()
	for _, retry := range []string{"", protocol.RetryUnsent, protocol.RetryIdempotent} {
		t.Run("retry="+retry, func(t *testing.T) {
			t.Parallel()
			b := newBalancer(t)
			s1, s2 := startServant(t, "obj"), startServant(t, "obj")
			hold := make(chan struct{})
			s1.hold.Store(&hold)
			s2.hold.Store(&hold)
			defer close(hold)
			fd := perRequest(t, b, protocol.Group{Retry: retry})
			register(t, b, "g", s1.ref.String())
			register(t, b, "g", s2.ref.String())
			c := dial(t, fd)
			c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 3, "g", 3))
			ran, other := s1, s2
			select {
			case <-s1.seen:
			case <-s2.seen:
				ran, other = s2, s1
			case <-time.After(waitBound):
				t.Fatal("the call reached no replica")
			}
			ran.stop()
			rep, ok := c.recv().(*giop.Reply)
			if !ok || rep.RequestID != 3 {
				t.Fatalf("answer %+v", rep)
			}
			if ex, _ := rep.SystemException(); ex.Name() != "COMM_FAILURE" || ex.Completed != giop.CompletedMaybe {
				t.Errorf("exception %+v, want COMM_FAILURE COMPLETED_MAYBE", ex)
			}
			select {
			case id := <-other.seen:
				t.Errorf("the lost call was replayed on the other replica (request %d)", id)
			default:
			}
		})
	}
}

// TestProxyLocate: per-request LocateRequests are answered OBJECT_HERE.
func TestProxyLocate(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := perRequest(t, b, protocol.Group{})
	register(t, b, "g", startPrime(t).String())
	c := dial(t, fd)
	c.send(&giop.LocateRequest{Envelope: env(giop.V12, cdr.BigEndian), RequestID: 4, Target: giop.KeyTarget([]byte("g"))})
	if rep, ok := c.recv().(*giop.LocateReply); !ok || rep.Status != giop.LocateObjectHere {
		t.Fatalf("locate answered %+v, want OBJECT_HERE", rep)
	}
}
