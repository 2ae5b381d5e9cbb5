package giopagent_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
)

// TestAdvisoryCycleMovesORBClient runs the TAO paper's load-advisory cycle
// (§3.2, steps 8–11) with a client ORB that follows forwards as the CORBA
// specification requires: bound through the group's corbaloc to the
// replica behind one agent, it is forwarded back to the front door when
// that replica is drained, and the front door binds it to the other
// replica, with no call failing.
func TestAdvisoryCycleMovesORBClient(t *testing.T) {
	t.Parallel()
	l := startBalancer(t)
	putGIOPGroup(l, "cyc", map[string]any{"strategy": "round-robin"})
	servants := []*servant{startServant(t), startServant(t)}
	agents := []*agentUnderTest{startRegisteredAgent(t, l, "cyc", servants[0]), startRegisteredAgent(t, l, "cyc", servants[1])}
	g := l.group("cyc")

	o, err := orb.New(orb.Options{Locate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	obj, err := o.Resolve(g.Reference.Corbaloc)
	if err != nil {
		t.Fatal(err)
	}
	prime := orb.Prime{Object: obj}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	at := func() int { // the agent the client is bound to
		p, _ := obj.Target().IIOP()
		addr := net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port)))
		for i, a := range agents {
			if a.addr == addr {
				return i
			}
		}
		t.Fatalf("client bound to %s, not to an agent", addr)
		return -1
	}
	call := func() {
		t.Helper()
		if ok, _, err := prime.IsPrime(ctx, 7919); err != nil || !ok {
			t.Fatalf("is_prime(7919) = %v, %v", ok, err)
		}
	}
	call()
	from := at()
	to := 1 - from
	before := servants[to].calls.Load()
	l.do(http.MethodPost, "/v1/groups/cyc/replicas/"+agents[from].id+"/drain", nil, nil)
	waitFor(t, 10*time.Second, "the drain advisory at the agent", func() bool { return agents[from].mon.Advisory().Advisory == "drain" })
	call()
	if got := at(); got != to {
		t.Fatalf("after the drain the client is at agent %d, want %d", got, to)
	}
	for range 5 {
		call()
	}
	if got := servants[to].calls.Load() - before; got != 6 {
		t.Errorf("the replica the client moved to served %d calls, want 6", got)
	}
	if agents[from].a.Forwards() != 1 {
		t.Errorf("the drained agent forwarded %d calls, want 1", agents[from].a.Forwards())
	}
}

// TestFragmentedRequestSentBack: a client sent back while its request
// comes in fragments gets LOCATION_FORWARD once the last fragment is in;
// no piece of the request reaches the servant, and the connection goes on.
func TestFragmentedRequestSentBack(t *testing.T) {
	t.Parallel()
	l := startBalancer(t)
	putGIOPGroup(l, "fr", nil)
	s := startServant(t)
	ag := startRegisteredAgent(t, l, "fr", s)
	l.do(http.MethodPost, "/v1/groups/fr/replicas/"+ag.id+"/drain", nil, nil)
	waitFor(t, 10*time.Second, "the drain advisory at the agent", func() bool { return ag.mon.Advisory().Advisory == "drain" })
	for _, v := range []giop.Version{giop.V11, giop.V12} {
		rc := dialRaw(t, ag.addr)
		req := rc.request(v, cdr.LittleEndian, giop.OpPrimeCount, 100)
		out, err := giop.EncodeMessage(req)
		if err != nil {
			t.Fatal(err)
		}
		pieces := splitMessage(t, out, req.BodyOffset, req.RequestID)
		rc.sendBytes(pieces[0])
		if m, err := rc.tryRecv(100 * time.Millisecond); err == nil {
			t.Fatalf("GIOP %v: answer %T before the last fragment", v, m)
		}
		rc.sendBytes(pieces[1])
		rep, _ := forwardOf(t, rc.recv())
		if rep.RequestID != req.RequestID || rep.Version != v {
			t.Errorf("GIOP %v: forward to request %d in %v, want %d in %v", v, rep.RequestID, rep.Version, req.RequestID, v)
		}
	}
	if s.calls.Load() != 0 {
		t.Errorf("the servant served %d calls, want none", s.calls.Load())
	}
}

// TestCancelEndsTheCall: a CancelRequest passes to the servant's side and
// ends the call's measurement; the reply that still comes passes back.
func TestCancelEndsTheCall(t *testing.T) {
	t.Parallel()
	l := startBalancer(t)
	putGIOPGroup(l, "cx", nil)
	s := startServant(t)
	ag := startRegisteredAgent(t, l, "cx", s)
	rc := dialRaw(t, ag.addr)
	req := rc.request(giop.V12, cdr.BigEndian, opHold, 5)
	rc.send(req)
	waitFor(t, 10*time.Second, "the held call in flight", func() bool { return l.group("cx").Replicas[0].Metrics["inflight"] == 1 })
	rc.send(&giop.CancelRequest{Envelope: giop.Envelope{Version: giop.V12}, RequestID: req.RequestID})
	waitFor(t, 10*time.Second, "no call in flight after the cancel", func() bool { return l.group("cx").Replicas[0].Metrics["inflight"] == 0 })
	s.release()
	if rep, ok := rc.recv().(*giop.Reply); !ok || rep.RequestID != req.RequestID {
		t.Fatalf("reply after the cancel %+v", rep)
	}
}

// TestShutdownClosesIdleConnections: Shutdown waits for the call in
// flight, which gets its reply, then tells the client CloseConnection in
// its GIOP version and closes the connection.
func TestShutdownClosesIdleConnections(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	a, addr := startAgent(t, giopagent.Options{Target: s.ref})
	busy, idle := dialRaw(t, addr), dialRaw(t, addr)
	idle.call(idle.request(giop.V11, cdr.BigEndian, giop.OpIsPrime, 3))
	req := busy.request(giop.V12, cdr.LittleEndian, opHold, 9)
	busy.send(req)
	waitFor(t, 5*time.Second, "the held call at the servant", func() bool { return s.holding.Load() == 1 })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- a.Shutdown(ctx)
	}()
	if cc, ok := idle.recv().(*giop.CloseConnection); !ok || cc.Version != giop.V11 {
		t.Fatalf("idle client got %+v, want a GIOP 1.1 CloseConnection", cc)
	}
	if !idle.closedByPeer(5 * time.Second) {
		t.Fatal("idle connection left open")
	}
	s.release()
	if rep, ok := busy.recv().(*giop.Reply); !ok || rep.RequestID != req.RequestID {
		t.Fatalf("held call's answer %+v, want its reply", rep)
	}
	if _, ok := busy.recv().(*giop.CloseConnection); !ok {
		t.Fatal("no CloseConnection after the last reply")
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
