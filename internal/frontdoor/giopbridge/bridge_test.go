package giopbridge_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
)

// Many clients, several ORBs each multiplexing concurrent calls on one
// connection, increment the replicated counter through the bridge: each
// call gets its own reply (the values are exactly 1..N, none twice), and
// every replica ends with N increments and the same state.
func TestConcurrentClientsGetTheirOwnReplies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 2})
	const orbs, workers, each = 3, 6, 8
	var mu sync.Mutex
	var values []int64
	var wg sync.WaitGroup
	for range orbs {
		o, err := orb.New(orb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		obj, err := o.Resolve("corbaloc:iiop:1.2@" + r.addr + "/" + groupKey)
		if err != nil {
			t.Fatal(err)
		}
		cc := backend.CounterClient{Object: obj}
		for range workers {
			wg.Go(func() {
				for range each {
					v, err := cc.Increment(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					values = append(values, v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	const n = orbs * workers * each
	slices.Sort(values)
	for i, v := range values {
		if v != int64(i+1) {
			t.Fatalf("sorted replies %v, want 1..%d", values, n)
		}
	}
	if len(values) != n {
		t.Fatalf("%d replies, want %d", len(values), n)
	}
	r.waitIncrements(ctx, n)
	a, b := r.replicas[0].counter.State(), r.replicas[1].counter.State()
	if a != b || a.Value != n {
		t.Fatalf("replica states %+v and %+v, want equal with value %d", a, b, n)
	}
}

// Requests pipelined on one raw connection, in every GIOP version and
// byte order, are each answered under their own request id, in the
// request's version and order.
func TestPipelinedRequestsAnsweredByRequestID(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 1})
	c := r.dial(t)
	type sent struct {
		v giop.Version
		o cdr.ByteOrder
	}
	want := map[uint32]sent{}
	id := uint32(100)
	for _, v := range []giop.Version{giop.V10, giop.V11, giop.V12} {
		for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			for range 3 {
				id += 7
				want[id] = sent{v, o}
				c.send(request(v, o, id, groupKey, backend.OpIncrement))
			}
		}
	}
	seen := map[int64]bool{}
	for range want {
		rep := c.reply()
		s, ok := want[rep.RequestID]
		if !ok || rep.Version != s.v || rep.Order != s.o {
			t.Fatalf("reply id %d in %v %v: not a request sent so (%+v, %v)", rep.RequestID, rep.Version, rep.Order, s, ok)
		}
		delete(want, rep.RequestID)
		v := longLong(t, rep)
		if seen[v] {
			t.Fatalf("value %d answered twice", v)
		}
		seen[v] = true
	}
	r.waitIncrements(ctx, 18)
}

// A request retried with the same FT_REQUEST context, on a new
// connection and with another request id, gets the original reply; it is
// not ordered again (the next new request counts one more, and the
// replicas count two increments).
func TestFTRequestRetryGetsTheOriginalReply(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 2})
	ft := func(retention int32, o cdr.ByteOrder) giop.ServiceContext {
		return giop.ServiceContext{ID: ordered.ServiceFTRequest, Data: ordered.FTRequest{ClientID: "omni-1", RetentionID: retention}.Encode(o)}
	}
	c1 := r.dial(t)
	c1.send(request(giop.V12, cdr.BigEndian, 1, groupKey, backend.OpIncrement, ft(5, cdr.BigEndian)))
	first := longLong(t, c1.reply())

	c2 := r.dial(t)
	c2.send(request(giop.V12, cdr.BigEndian, 42, groupKey, backend.OpIncrement, ft(5, cdr.LittleEndian)))
	again := c2.reply()
	if again.RequestID != 42 || longLong(t, again) != first {
		t.Fatalf("retry: reply id %d value %d, want id 42 and the original %d", again.RequestID, longLong(t, again), first)
	}
	c2.send(request(giop.V12, cdr.BigEndian, 43, groupKey, backend.OpIncrement, ft(6, cdr.BigEndian)))
	if got := longLong(t, c2.reply()); got != first+1 {
		t.Fatalf("next request: %d, want %d", got, first+1)
	}
	r.waitIncrements(ctx, 2)
	for _, rep := range r.replicas {
		if st := rep.counter.State(); st.Increments != 2 {
			t.Fatalf("replica %s: %d increments, want 2", rep.id, st.Increments)
		}
	}
}

// The time and seed the bridge stamps reach every replica: their states,
// last_changed and last_id included, are equal.
func TestStampsMakeReplicasAgree(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 3})
	c := r.dial(t)
	for i := range 5 {
		c.send(request(giop.V11, cdr.LittleEndian, uint32(i), groupKey, backend.OpIncrement))
		_ = longLong(t, c.reply())
	}
	r.waitIncrements(ctx, 5)
	first := r.replicas[0].counter.State()
	for _, rep := range r.replicas[1:] {
		if st := rep.counter.State(); st != first {
			t.Fatalf("replica %s state %+v, replica a %+v", rep.id, st, first)
		}
	}
	if first.LastID == 0 || first.LastChanged.IsZero() {
		t.Fatalf("state %+v: not stamped", first)
	}
}

// A oneway request is ordered and applied, and answered with nothing.
func TestOnewayIsOrderedWithoutReply(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 2})
	c := r.dial(t)
	ow := request(giop.V12, cdr.BigEndian, 1, groupKey, backend.OpIncrement)
	ow.ResponseFlags = giop.FlagsOneway
	c.send(ow)
	r.waitIncrements(ctx, 1)
	c.send(request(giop.V12, cdr.BigEndian, 2, groupKey, backend.OpValue))
	rep := c.reply()
	if rep.RequestID != 2 || longLong(t, rep) != 1 {
		t.Fatalf("the first reply is id %d value %d, want the value() call's (2) with 1", rep.RequestID, longLong(t, rep))
	}
}

// LocateRequest is answered by the bridge: OBJECT_HERE for the group's
// key, UNKNOWN_OBJECT for another; a Request for another key gets
// OBJECT_NOT_EXIST; with no live replica TRANSIENT, COMPLETED_NO.
func TestLocateAndKeys(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{replicas: 0})
	c := r.dial(t)
	for key, want := range map[string]giop.LocateStatus{groupKey: giop.LocateObjectHere, "other": giop.LocateUnknownObject} {
		for _, v := range []giop.Version{giop.V10, giop.V12} {
			c.send(&giop.LocateRequest{Envelope: giop.Envelope{Version: v}, RequestID: 9, Target: giop.KeyTarget([]byte(key))})
			m := c.next()
			lr, ok := m.(*giop.LocateReply)
			if !ok || lr.RequestID != 9 || lr.Status != want || lr.Version != v {
				t.Fatalf("LocateRequest %s in %v: %+v, want %v", key, v, m, want)
			}
		}
	}
	c.send(request(giop.V12, cdr.BigEndian, 3, "other", backend.OpIncrement))
	if ex := sysex(t, c.reply()); ex.RepositoryID != giop.RepoIDObjectNotExist || ex.Completed != giop.CompletedNo {
		t.Fatalf("another key: %v", ex)
	}
	c.send(request(giop.V12, cdr.BigEndian, 4, groupKey, backend.OpIncrement))
	if ex := sysex(t, c.reply()); ex.RepositoryID != giop.RepoIDTransient || ex.Completed != giop.CompletedNo {
		t.Fatalf("no replica: %v", ex)
	}
}

// A request above the log's max_payload gets IMP_LIMIT, COMPLETED_NO, and
// is not applied; a malformed FT_REQUEST context MARSHAL; the connection
// serves on after both.
func TestRefusedRequests(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{replicas: 1, maxPayload: 2048})
	c := r.dial(t)
	big := request(giop.V12, cdr.BigEndian, 1, groupKey, backend.OpSetState)
	big.SetBody(func(e *cdr.Encoder) { e.OctetSeq(make([]byte, 4096)) })
	c.send(big)
	if ex := sysex(t, c.reply()); ex.RepositoryID != "IDL:omg.org/CORBA/IMP_LIMIT:1.0" || ex.Completed != giop.CompletedNo {
		t.Fatalf("too large: %v", ex)
	}
	c.send(request(giop.V12, cdr.BigEndian, 2, groupKey, backend.OpIncrement, giop.ServiceContext{ID: ordered.ServiceFTRequest, Data: []byte{0, 1, 2}}))
	if ex := sysex(t, c.reply()); ex.RepositoryID != "IDL:omg.org/CORBA/MARSHAL:1.0" || ex.Completed != giop.CompletedNo {
		t.Fatalf("malformed FT_REQUEST: %v", ex)
	}
	c.send(request(giop.V12, cdr.BigEndian, 3, groupKey, backend.OpIncrement))
	if got := longLong(t, c.reply()); got != 1 {
		t.Fatalf("increment after the refusals: %d, want 1", got)
	}
	r.waitIncrements(ctx, 1)
}

// Bad input is answered MessageError and closes that connection alone.
func TestBadInput(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{replicas: 1})
	reply, _ := giop.EncodeMessage(&giop.Reply{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 1})
	frag, _ := giop.EncodeMessage(&giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 77, Body: []byte{1, 2, 3, 4}})
	huge := []byte("GIOP\x01\x02\x00\x00\x7f\xff\xff\xff")
	for name, b := range map[string][]byte{
		"garbage":             []byte("GET / HTTP/1.1\r\n\r\n"),
		"bad version":         []byte("GIOP\x02\x00\x00\x00\x00\x00\x00\x00"),
		"a reply":             reply,
		"fragment of nothing": frag,
		"too large":           huge,
		"truncated body":      []byte("GIOP\x01\x02\x00\x00\x00\x00\x00\x04\x00"),
	} {
		t.Run(name, func(t *testing.T) {
			c := r.dial(t)
			if _, err := c.nc.Write(b); err != nil {
				t.Fatal(err)
			}
			if name == "truncated body" {
				// Wait for nothing: the client closes its side mid-message.
				_ = c.nc.(interface{ CloseWrite() error }).CloseWrite()
				if m := c.next(); m != nil {
					t.Fatalf("got %v, want the connection closed", m)
				}
				return
			}
			m := c.next()
			if _, ok := m.(*giop.MessageError); !ok {
				t.Fatalf("got %v, want MessageError", m)
			}
			if m := c.next(); m != nil {
				t.Fatalf("got %v after MessageError, want the connection closed", m)
			}
		})
	}
	// The bridge still serves.
	c := r.dial(t)
	c.send(request(giop.V12, cdr.BigEndian, 1, groupKey, backend.OpValue))
	if got := longLong(t, c.reply()); got != 0 {
		t.Fatal(fmt.Sprint("value ", got))
	}
}

// Shutdown closes an idle client connection with CloseConnection.
func TestShutdownClosesIdleConnections(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{replicas: 1})
	c := r.dial(t)
	c.send(request(giop.V11, cdr.LittleEndian, 1, groupKey, backend.OpValue))
	_ = c.reply()
	ctx := testCtx(t)
	if err := r.bridge.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	m := c.next()
	if cc, ok := m.(*giop.CloseConnection); !ok || cc.Version != giop.V11 {
		t.Fatalf("got %v, want CloseConnection in GIOP 1.1", m)
	}
	if m := c.next(); m != nil {
		t.Fatalf("got %v after CloseConnection", m)
	}
}
