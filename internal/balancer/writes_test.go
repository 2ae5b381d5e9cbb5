package balancer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// gatedStore holds the first write made after arm until release is
// closed, telling blocked when it holds it.
type gatedStore struct {
	store.Store
	armed   atomic.Bool
	blocked chan struct{}
	release chan struct{}
}

func (s *gatedStore) Txn(ctx context.Context, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
	if s.armed.CompareAndSwap(true, false) {
		close(s.blocked)
		<-s.release
	}
	return s.Store.Txn(ctx, conds, ops)
}

// TestLaterChangeIsWrittenLast holds a drain's store write while the
// replica is activated again: the activation, made after the drain in
// memory, must reach the store after it, however the two writes race.
func TestLaterChangeIsWrittenLast(t *testing.T) {
	t.Parallel()
	gate := &gatedStore{blocked: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, envOptions{noStart: true, wrapStore: func(st store.Store) store.Store {
		gate.Store = st
		return gate
	}})
	e.mustPutGroup(protocol.Group{Name: "order", ReportInterval: ms(20)})
	a := e.mustRegister("order", "http://127.0.0.1:9402")
	events := e.subscribe("order")

	gate.armed.Store(true)
	drained := make(chan error, 1)
	go func() { drained <- e.b.Drain("order", a.ID) }()
	recv(t, gate.blocked, 5*time.Second, "the drain's write to reach the store")
	activated := make(chan error, 1)
	go func() { activated <- e.b.Activate("order", a.ID) }()
	// The activation is made in memory while the drain's write is held.
	waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateActive)))
	close(gate.release)
	if err := recv(t, drained, 5*time.Second, "Drain"); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, activated, 5*time.Second, "Activate"); err != nil {
		t.Fatal(err)
	}
	e2 := e.reopen(envOptions{noStart: true})
	if got := replicaOf(t, e2.mustGroup("order"), a.ID).State; got != protocol.StateActive {
		t.Errorf("the store holds %s, want active (the later change)", got)
	}
}
