package giopdeliver_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// A Counter's state moves to another through get_state and set_state; a
// refused state is an error naming FT::InvalidState; a servant that is no
// Checkpointable (Prime) cannot checkpoint and gives ErrNoState.
func TestStateTransfer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	src := &backend.Counter{}
	a := newDeliverer(t, startCounter(t, src).String())
	for pos := uint64(1); pos <= 3; pos++ {
		if _, err := a.Deliver(ctx, pos, entry(t, giop.V12, cdr.BigEndian, 1, giop.FlagsTwoway, "g", backend.OpIncrement)); err != nil {
			t.Fatal(err)
		}
	}
	if !a.CanCheckpoint(ctx) {
		t.Fatal("a Counter cannot checkpoint")
	}
	state, err := a.State(ctx)
	if err != nil || !bytes.Equal(state, backend.MarshalCounterState(src.State())) {
		t.Fatalf("State = %q, %v", state, err)
	}
	dst := &backend.Counter{}
	// corbaloc without a version: GIOP 1.0 for the agent's own calls.
	p, _ := startCounter(t, dst).IIOP()
	b := newDeliverer(t, "corbaloc:iiop:"+p.Address().HostPort()+"/Counter")
	if err := b.SetState(ctx, state); err != nil {
		t.Fatal(err)
	}
	if dst.State() != src.State() {
		t.Fatalf("state after SetState %+v, want %+v", dst.State(), src.State())
	}
	if err := b.SetState(ctx, []byte("garbage")); err == nil || !bytes.Contains([]byte(err.Error()), []byte(giopdeliver.InvalidStateRepoID)) {
		t.Fatalf("SetState(garbage) = %v, want FT::InvalidState", err)
	}

	prime := newDeliverer(t, serve(t, backend.NewGIOPPrime(backend.GIOPPrimeOptions{})).String())
	if prime.CanCheckpoint(ctx) {
		t.Fatal("Prime can checkpoint")
	}
	if _, err := prime.State(ctx); !errors.Is(err, giopdeliver.ErrNoState) {
		t.Fatalf("Prime State = %v, want ErrNoState", err)
	}
}
