package balancer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// cutStore is a real store as an etcd store behaves when etcd cannot be
// reached: with known set it says so (store.Reachability); with cut set
// its transactions fail with an error wrapping store.ErrUnavailable, as
// one sent just before etcd was known to be gone does. Reads still work
// (the follower's reload after a failed deletion reads).
type cutStore struct {
	store.Store
	known, cut atomic.Bool
	txns       atomic.Int64
}

var errCut = fmt.Errorf("store: etcd at http://192.0.2.1:2379: txn: %w: context deadline exceeded", store.ErrUnavailable)

func (s *cutStore) Txn(ctx context.Context, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
	s.txns.Add(1)
	if s.cut.Load() {
		return false, 0, nil, errCut
	}
	return s.Store.Txn(ctx, conds, ops)
}

func (s *cutStore) Unreachable() error {
	if s.known.Load() {
		return fmt.Errorf("%w: etcd at http://192.0.2.1:2379 has not answered since 2026-11-27T08:00:00Z", store.ErrUnavailable)
	}
	return nil
}

// adminWrites are every admin write of a group "g" with replica id, as
// the API makes them.
func adminWrites(e *env, id string) map[string]func() error {
	b := e.b
	return map[string]func() error{
		"drain":  func() error { return b.Drain("g", id) },
		"remove": func() error { return b.RemoveReplica("g", id) },
		"register": func() error {
			_, _, err := b.Register("g", protocol.Registration{Address: "http://127.0.0.1:9502"})
			return err
		},
		"block": func() error { _, err := b.Block("g", "http://127.0.0.1:9503"); return err },
		"patch": func() error {
			s := "random"
			_, err := b.PatchGroup("g", protocol.GroupPatch{Strategy: &s})
			return err
		},
		"put": func() error {
			_, _, err := b.PutGroup(protocol.Group{Name: "g", FrontDoor: "127.0.0.1:0", ReportInterval: ms(20), Strategy: "random"})
			return err
		},
	}
}

// unchanged checks that group g is as written before the failed writes:
// round-robin, its one replica active, nothing blocked.
func unchanged(t *testing.T, e *env, id, what string) {
	t.Helper()
	st := e.mustGroup("g")
	if st.Strategy != "round-robin" {
		t.Errorf("after a refused %s: strategy %s, want round-robin (unchanged)", what, st.Strategy)
	}
	if ids := replicaIDs(st); len(ids) != 1 || ids[0] != id {
		t.Errorf("after a refused %s: replicas %v, want only %s", what, ids, id)
	}
	if got := replicaOf(t, st, id).State; got != protocol.StateActive {
		t.Errorf("after a refused %s: replica %s, want active", what, got)
	}
	if _, err := e.b.Block("g", "http://127.0.0.1:9503"); err == nil {
		if err := e.b.Unblock("g", "http://127.0.0.1:9503"); err != nil {
			t.Fatal(err)
		}
	} else if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("block after a refused %s: %v", what, err)
	}
}

// TestStoreKnownUnreachableRefusesWrites: while the store says it cannot
// be reached, every admin write fails with store.ErrUnavailable before it
// sends anything to the store or changes anything in memory; reads and
// reports go on.
func TestStoreKnownUnreachableRefusesWrites(t *testing.T) {
	t.Parallel()
	cs := &cutStore{}
	e := newEnv(t, envOptions{wrapStore: func(st store.Store) store.Store { cs.Store = st; return cs }})
	e.mustPutGroup(protocol.Group{Name: "g", ReportInterval: ms(20), Strategy: "round-robin"})
	a := e.mustRegister("g", "http://127.0.0.1:9501")
	if err := e.b.StoreUnreachable(); err != nil {
		t.Fatalf("StoreUnreachable with the store up = %v", err)
	}
	cs.known.Store(true)
	before := cs.txns.Load()
	writes := adminWrites(e, a.ID)
	writes["activate"] = func() error { return e.b.Activate("g", a.ID) }
	writes["unblock"] = func() error { return e.b.Unblock("g", "http://127.0.0.1:9503") }
	writes["delete"] = func() error { return e.b.DeleteGroup("g") }
	for name, w := range writes {
		if err := w(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the store unreachable = %v, want store.ErrUnavailable", name, err)
		}
	}
	if n := cs.txns.Load() - before; n != 0 {
		t.Errorf("%d transactions sent to an unreachable store, want none", n)
	}
	if err := e.b.StoreUnreachable(); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("StoreUnreachable = %v, want store.ErrUnavailable", err)
	}
	e.mustReport(a.Token, protocol.Report{Load: 0.5})
	cs.known.Store(false)
	unchanged(t, e, a.ID, "write")
}

// TestFailedWriteIsUndone: a write the store fails (etcd lost after the
// check) is undone in memory, whichever write it is.
func TestFailedWriteIsUndone(t *testing.T) {
	t.Parallel()
	cs := &cutStore{}
	e := newEnv(t, envOptions{wrapStore: func(st store.Store) store.Store { cs.Store = st; return cs }})
	e.mustPutGroup(protocol.Group{Name: "g", ReportInterval: ms(20), Strategy: "round-robin"})
	a := e.mustRegister("g", "http://127.0.0.1:9501")
	for name, w := range adminWrites(e, a.ID) {
		cs.cut.Store(true)
		err := w()
		cs.cut.Store(false)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the store failing = %v, want store.ErrUnavailable", name, err)
		}
		unchanged(t, e, a.ID, name)
	}
	// And an activation of a drained replica.
	if err := e.b.Drain("g", a.ID); err != nil {
		t.Fatal(err)
	}
	cs.cut.Store(true)
	err := e.b.Activate("g", a.ID)
	cs.cut.Store(false)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("activate with the store failing = %v, want store.ErrUnavailable", err)
	}
	if got := replicaOf(t, e.mustGroup("g"), a.ID).State; got != protocol.StateDraining {
		t.Errorf("after a failed activate: replica %s, want draining", got)
	}
}

// TestFailedGroupDeletionComesBack: a group whose deletion the store
// failed is stopped here at once; the follower then loads the store again
// and, the record being still there, brings the group back with its
// replicas.
func TestFailedGroupDeletionComesBack(t *testing.T) {
	t.Parallel()
	cs := &cutStore{}
	e := newEnv(t, envOptions{follow: true, wrapStore: func(st store.Store) store.Store { cs.Store = st; return cs }})
	e.mustPutGroup(protocol.Group{Name: "g", ReportInterval: ms(20), Strategy: "round-robin"})
	a := e.mustRegister("g", "http://127.0.0.1:9501")
	cs.cut.Store(true)
	err := e.b.DeleteGroup("g")
	cs.cut.Store(false)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("delete with the store failing = %v, want store.ErrUnavailable", err)
	}
	eventually(t, 10*time.Second, func() error {
		st, err := e.b.Group("g")
		if err != nil {
			return err
		}
		if ids := replicaIDs(st); len(ids) != 1 || ids[0] != a.ID {
			return fmt.Errorf("replicas %v, want %s", ids, a.ID)
		}
		return nil
	})
}
