package giopdoor_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestShutdownFinishesCalls: stopping the front door tells an idle client
// CloseConnection at once, lets a proxied call in flight finish and be
// answered, and only then closes that client with CloseConnection.
func TestShutdownFinishesCalls(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	s := startServant(t, "obj")
	hold := make(chan struct{})
	s.hold.Store(&hold)
	fd := perRequest(t, b, protocol.Group{})
	register(t, b, "g", s.ref.String())

	idle, busy := dial(t, fd), dial(t, fd)
	idle.send(&giop.LocateRequest{Envelope: env(giop.V12, cdr.LittleEndian), RequestID: 1, Target: giop.KeyTarget([]byte("g"))})
	idle.recv()
	busy.send(isPrimeRequest(giop.V12, cdr.BigEndian, 8, "g", 29))
	recvN(t, s.seen, "the call")

	deleted := make(chan error, 1)
	go func() { deleted <- b.DeleteGroup("g") }()
	if m, ok := idle.recv().(*giop.CloseConnection); !ok || m.Order != cdr.LittleEndian {
		t.Fatalf("idle client got %+v, want CloseConnection", m)
	}
	idle.eof()
	select {
	case err := <-deleted:
		t.Fatalf("the group was deleted (%v) with a call in flight", err)
	default:
	}
	close(hold)
	rep, ok := busy.recv().(*giop.Reply)
	if !ok || rep.RequestID != 8 || rep.Status != giop.StatusNoException {
		t.Fatalf("call in flight answered %+v", rep)
	}
	if _, ok := busy.recv().(*giop.CloseConnection); !ok {
		t.Fatal("busy client not sent CloseConnection after its call")
	}
	busy.eof()
	if err := recvN(t, deleted, "the deletion"); err != nil {
		t.Fatal(err)
	}
}
