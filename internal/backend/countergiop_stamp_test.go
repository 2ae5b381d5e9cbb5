package backend_test

import (
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// rawCall sends req on a fresh connection to ref's address and returns
// the reply.
func rawCall(t *testing.T, addr string, req *giop.Request) *giop.Reply {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wire.NewWriter(nc).Write(req); err != nil {
		t.Fatal(err)
	}
	b, err := wire.NewReader(nc, giop.Limits{}).Next()
	if err != nil {
		t.Fatal(err)
	}
	m, err := giop.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := m.(*giop.Reply)
	if !ok {
		t.Fatalf("got a %v, want a Reply", m.Type())
	}
	return rep
}

// An increment carrying the bridge's time/seed service context is stamped
// with its time and with the first number of a PCG seeded with its seed,
// as the HTTP counter does with Fulcrum-Time and Fulcrum-Seed; a malformed
// context raises BAD_PARAM and changes nothing.
func TestGIOPCounterTimeSeed(t *testing.T) {
	t.Parallel()
	c := &backend.Counter{}
	ref := startGIOPCounter(t, c, backend.GIOPCounterOptions{Now: func() time.Time { return time.Unix(1, 0) }, Rand: func() uint64 { return 1 }})
	p, _ := ref.IIOP()
	at := time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC)
	for _, order := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
		req := &giop.Request{Envelope: giop.Envelope{Version: giop.V12, Order: order}, RequestID: 5, ResponseFlags: giop.FlagsTwoway,
			Target: giop.KeyTarget([]byte(backend.GIOPCounterKey)), Operation: backend.OpIncrement}
		ordered.SetTimeSeed(req, ordered.TimeSeed{Time: at, Seed: 77})
		if rep := rawCall(t, p.Address().HostPort(), req); rep.Status != giop.StatusNoException {
			t.Fatalf("%v: increment status %v", order, rep.Status)
		}
		st := c.State()
		if !st.LastChanged.Equal(at) || st.LastID != rand.New(rand.NewPCG(77, 0)).Uint64() {
			t.Fatalf("%v: state %+v, want last_changed %v and the seed's first number", order, st, at)
		}
	}
	req := &giop.Request{Envelope: giop.Envelope{Version: giop.V10}, RequestID: 6, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte(backend.GIOPCounterKey)), Operation: backend.OpIncrement,
		ServiceContexts: []giop.ServiceContext{{ID: ordered.ServiceTimeSeed, Data: []byte{0, 1}}}}
	rep := rawCall(t, p.Address().HostPort(), req)
	ex, err := rep.SystemException()
	if err != nil || ex.Name() != "BAD_PARAM" || ex.Completed != giop.CompletedNo {
		t.Fatalf("malformed context: %v, %v; want BAD_PARAM, COMPLETED_NO", ex, err)
	}
	if st := c.State(); st.Value != 2 {
		t.Fatalf("value %d after the refused increment, want 2", st.Value)
	}
}
