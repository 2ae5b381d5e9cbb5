package balancer_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// intruder is a second writer sharing the balancer's store, as another
// instance of a cluster would: just before each of the next n transactions
// conditioned on the revision of key, it puts value there itself, so that
// the balancer's transaction finds the record changed.
type intruder struct {
	store.Store
	key   string
	value []byte

	mu   sync.Mutex
	n    int
	revs []int64 // the revisions the intruder wrote at
}

func (s *intruder) arm(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = n
}

func (s *intruder) written() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.revs...)
}

func (s *intruder) Txn(ctx context.Context, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
	s.mu.Lock()
	if len(conds) == 1 && conds[0].Key == s.key && conds[0].Target == store.TargetModRev && s.n > 0 {
		s.n--
		_, rev, _, err := s.Store.Txn(ctx, nil, []store.Op{store.Put(s.key, s.value)})
		if err != nil {
			s.mu.Unlock()
			return false, 0, nil, err
		}
		s.revs = append(s.revs, rev)
	}
	s.mu.Unlock()
	return s.Store.Txn(ctx, conds, ops)
}

// newIntruded returns an env whose store has an intruder on group name's
// record, writing the group with strategy round-robin.
func newIntruded(t *testing.T, name string) (*env, *intruder) {
	t.Helper()
	value, err := json.Marshal(protocol.Group{Name: name, FrontDoor: "127.0.0.1:0", Strategy: "round-robin"})
	if err != nil {
		t.Fatal(err)
	}
	in := &intruder{key: groupstore.GroupKey(name), value: value}
	e := newEnv(t, envOptions{wrapStore: func(st store.Store) store.Store { in.Store = st; return in }})
	return e, in
}

// storedGroup reads group name's record and revision from the store.
func storedGroup(t *testing.T, st store.Store, name string) (protocol.Group, int64) {
	t.Helper()
	kv, err := st.Get(context.Background(), groupstore.GroupKey(name))
	if err != nil {
		t.Fatal(err)
	}
	var g protocol.Group
	if err := json.Unmarshal(kv.Value, &g); err != nil {
		t.Fatal(err)
	}
	return g, kv.ModRev
}

// A write without a Match whose transaction finds the record changed by
// another writer is written again on the new revision, and succeeds.
func TestWriteRetriedOnConflict(t *testing.T) {
	t.Parallel()
	e, in := newIntruded(t, "g")
	e.mustPutGroup(protocol.Group{Name: "g", Strategy: "least-loaded"})
	in.arm(2)
	st, err := e.b.PatchGroup("g", protocol.GroupPatch{Binding: ptr(protocol.PerRequest)})
	if err != nil {
		t.Fatalf("PatchGroup under two conflicting writes: %v", err)
	}
	revs := in.written()
	if len(revs) != 2 {
		t.Fatalf("the intruder wrote %d times, want 2", len(revs))
	}
	rec, rev := storedGroup(t, in.Store, "g")
	if st.Revision != rev || rev <= revs[1] {
		t.Fatalf("status revision %d, stored %d, intruder's last %d: want the stored one, after the intruder's", st.Revision, rev, revs[1])
	}
	if rec.Binding != protocol.PerRequest || st.Binding != protocol.PerRequest {
		t.Fatalf("stored binding %q, running %q; want per-request", rec.Binding, st.Binding)
	}
}

// A writer that keeps losing gives up after a bounded number of tries,
// with its in-memory change undone.
func TestWriteGivesUpAfterBoundedConflicts(t *testing.T) {
	t.Parallel()
	e, in := newIntruded(t, "g")
	e.mustPutGroup(protocol.Group{Name: "g", Strategy: "least-loaded"})
	in.arm(1000)
	_, err := e.b.PatchGroup("g", protocol.GroupPatch{Binding: ptr(protocol.PerRequest)})
	if !errors.Is(err, groupstore.ErrConflict) {
		t.Fatalf("PatchGroup against an endless writer: %v, want ErrConflict", err)
	}
	if n := len(in.written()); n < 2 || n > 10 {
		t.Fatalf("tried %d times, want a small bound", n)
	}
	if st := e.mustGroup("g"); st.Binding == protocol.PerRequest {
		t.Fatal("the refused change is still applied in memory")
	}
}

// A write with a revision that another writer overtakes between the check
// and the transaction fails with the intruder's revision, and its change
// is undone in memory.
func TestMatchOvertakenByAnotherWriter(t *testing.T) {
	t.Parallel()
	e, in := newIntruded(t, "g")
	cur := e.mustPutGroup(protocol.Group{Name: "g", Strategy: "least-loaded"}).Revision
	in.arm(1)
	_, err := e.b.PatchGroupIf("g", protocol.GroupPatch{Binding: ptr(protocol.PerRequest)}, balancer.Match{Rev: cur})
	var re *balancer.RevisionError
	if !errors.As(err, &re) || !errors.Is(err, balancer.ErrRevisionMismatch) {
		t.Fatalf("PatchGroupIf overtaken: %v, want a *RevisionError", err)
	}
	if revs := in.written(); len(revs) != 1 || re.Current != revs[0] {
		t.Fatalf("RevisionError.Current %d, want the intruder's revision %v", re.Current, revs)
	}
	if st := e.mustGroup("g"); st.Binding == protocol.PerRequest {
		t.Fatal("the refused change is still applied in memory")
	}
}

// Revisions survive a restart and keep growing after it.
func TestRevisionsMonotonicAcrossRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "a"})
	st, err := e.b.PatchGroup("a", protocol.GroupPatch{Binding: ptr(protocol.PerRequest)})
	if err != nil {
		t.Fatal(err)
	}
	before := st.Revision
	e2 := e.reopen(envOptions{})
	if got := e2.mustGroup("a").Revision; got != before {
		t.Fatalf("revision %d after restart, want %d", got, before)
	}
	st, err = e2.b.PatchGroup("a", protocol.GroupPatch{Binding: ptr(protocol.OnDemand)})
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision <= before {
		t.Fatalf("revision %d after a write following the restart, want above %d", st.Revision, before)
	}
	if b := e2.mustPutGroup(protocol.Group{Name: "b"}); b.Revision <= st.Revision {
		t.Fatalf("new group at revision %d, want above %d", b.Revision, st.Revision)
	}
	// The old revision no longer matches; the current one does.
	if _, err := e2.b.PatchGroupIf("a", protocol.GroupPatch{Binding: ptr(protocol.PerRequest)}, balancer.Match{Rev: before}); !errors.Is(err, balancer.ErrRevisionMismatch) {
		t.Fatalf("stale revision after restart: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
