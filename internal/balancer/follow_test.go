package balancer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// followWait bounds how long a change takes to reach the other balancer.
const followWait = 5 * time.Second

// replicaState is the state of replica id in group at b, or an error.
func replicaState(b *balancer.Balancer, group, id string) (string, error) {
	st, err := b.Group(group)
	if err != nil {
		return "", err
	}
	for _, r := range st.Replicas {
		if r.ID == id {
			return r.State, nil
		}
	}
	return "", fmt.Errorf("replica %s not in group %s: %+v", id, group, st.Replicas)
}

// Two balancers on one store, each following it, as two instances on one
// etcd: what one changes, the other applies from the store's watch.
func TestFollow(t *testing.T) {
	t.Parallel()
	logs, log := newLog()
	a := newEnv(t, envOptions{shared: true, follow: true})
	b := newEnv(t, envOptions{shared: true, follow: true, store: a.st, logger: log})

	// A group created at A is created at B, its front door serving.
	if _, _, err := a.b.PutGroup(protocol.Group{Name: "shared", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName}); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		if _, err := b.b.Group("shared"); err != nil {
			return err
		}
		if !b.b.Ready() {
			return errors.New("B is not ready: the group's front door does not serve")
		}
		return nil
	})

	// A replica registered at A is active at B, and its token works there.
	reg := a.mustRegister("shared", "http://127.0.0.1:9")
	eventually(t, followWait, func() error {
		s, err := replicaState(b.b, "shared", reg.ID)
		if err == nil && s != protocol.StateActive {
			err = fmt.Errorf("state %s, want active", s)
		}
		return err
	})
	if _, err := b.b.Report(reg.Token, protocol.Report{Load: 1}); err != nil {
		t.Errorf("report at B with the token A gave: %v", err)
	}

	// A strategy changed at B is used at A.
	rnd := strategy.RandomName
	if _, err := b.b.PatchGroup("shared", protocol.GroupPatch{Strategy: &rnd}); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		st, err := a.b.Group("shared")
		if err == nil && st.Strategy != rnd {
			err = fmt.Errorf("strategy at A %s, want %s", st.Strategy, rnd)
		}
		return err
	})

	// Drained at B: draining at A.
	if err := b.b.Drain("shared", reg.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		s, err := replicaState(a.b, "shared", reg.ID)
		if err == nil && s != protocol.StateDraining {
			err = fmt.Errorf("state at A %s, want %s", s, protocol.StateDraining)
		}
		return err
	})

	// Blocked at A: B refuses the address.
	if _, err := a.b.Block("shared", "http://127.0.0.1:10"); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		_, _, err := b.b.Register("shared", protocol.Registration{Address: "http://127.0.0.1:10"})
		var be *balancer.BlockedError
		if !errors.As(err, &be) {
			return fmt.Errorf("register at B of the address blocked at A: %v, want a BlockedError", err)
		}
		return nil
	})

	// A key nobody can decode is skipped, with a warning; B goes on.
	if _, _, _, err := a.st.Txn(context.Background(), nil, []store.Op{store.Put(groupstore.GroupKey("garbage"), []byte("{not json"))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		if len(logs.records(t, "cannot be decoded")) == 0 {
			return errors.New("no warning of the undecodable key")
		}
		return nil
	})

	// A replica removed at A, then the group deleted at A: gone at B.
	if err := a.b.DeleteGroup("shared"); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		if _, err := b.b.Group("shared"); err == nil {
			return errors.New("group deleted at A still at B")
		}
		return nil
	})
	if _, err := b.b.Report(reg.Token, protocol.Report{Load: 1}); err == nil {
		t.Error("the token of a replica of a deleted group still reports at B")
	}
}

// brokenWatch is a real store whose first watch delivers nothing until
// broken is closed, and then ends with ErrCompacted: the changes made
// meanwhile reach the follower only by its loading the store again.
type brokenWatch struct {
	store.Store
	broken chan struct{}
	first  chan struct{} // closed at the first Watch
}

func (s *brokenWatch) Watch(ctx context.Context, prefix string, from int64) (<-chan store.WatchResponse, error) {
	select {
	case <-s.first:
		return s.Store.Watch(ctx, prefix, from)
	default:
	}
	close(s.first)
	ch := make(chan store.WatchResponse, 1)
	go func() {
		defer close(ch)
		select {
		case <-s.broken:
			ch <- store.WatchResponse{Err: store.ErrCompacted}
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// After a broken watch (a compaction), the follower loads the store
// again and reconciles: a group created meanwhile appears, one deleted
// meanwhile goes, a replica registered meanwhile is there; an
// undecodable key is skipped, at the load as in the watch.
func TestFollowRelistsAfterBrokenWatch(t *testing.T) {
	t.Parallel()
	logs, log := newLog()
	a := newEnv(t, envOptions{shared: true, follow: true})
	a.mustPutGroup(protocol.Group{Name: "old", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest})
	if _, _, _, err := a.st.Txn(context.Background(), nil, []store.Op{store.Put(groupstore.GroupKey("garbage"), []byte("{not json"))}); err != nil {
		t.Fatal(err)
	}
	bw := &brokenWatch{broken: make(chan struct{}), first: make(chan struct{})}
	b := newEnv(t, envOptions{shared: true, follow: true, logger: log, store: a.st, wrapStore: func(st store.Store) store.Store {
		bw.Store = st
		return bw
	}})
	if _, err := b.b.Group("old"); err != nil {
		t.Fatalf("B did not load the group stored before it started: %v", err)
	}
	if len(logs.records(t, "cannot be decoded")) == 0 {
		t.Error("B's load did not warn of the undecodable key")
	}
	<-bw.first

	a.mustPutGroup(protocol.Group{Name: "new", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest})
	reg := a.mustRegister("new", "http://127.0.0.1:9")
	if err := a.b.DeleteGroup("old"); err != nil {
		t.Fatal(err)
	}
	for _, g := range b.b.Groups() { // Groups does not look names up in the store
		if g.Name == "new" {
			t.Fatal("B saw a change through a watch that delivers nothing")
		}
	}
	close(bw.broken)
	eventually(t, followWait, func() error {
		if _, err := b.b.Group("old"); err == nil {
			return errors.New("group deleted while the watch was broken is still at B")
		}
		s, err := replicaState(b.b, "new", reg.ID)
		if err == nil && s != protocol.StateActive {
			err = fmt.Errorf("state %s, want active", s)
		}
		return err
	})
	// And the watch goes on after the reload.
	rnd := strategy.RandomName
	if _, err := a.b.PatchGroup("new", protocol.GroupPatch{Strategy: &rnd}); err != nil {
		t.Fatal(err)
	}
	eventually(t, followWait, func() error {
		st, err := b.b.Group("new")
		if err == nil && st.Strategy != rnd {
			err = fmt.Errorf("strategy at B %s, want %s", st.Strategy, rnd)
		}
		return err
	})
}

// A group created and a replica registered at A a moment ago are not
// "unknown" at B while B's watch has not brought them: B reads them from
// the store before it answers so, and goes on. Here B's watch delivers
// nothing at all, so every answer below comes from those reads.
func TestFollowLooksUnknownRecordsUp(t *testing.T) {
	t.Parallel()
	a := newEnv(t, envOptions{shared: true, follow: true})
	bw := &brokenWatch{broken: make(chan struct{}), first: make(chan struct{})}
	b := newEnv(t, envOptions{shared: true, follow: true, store: a.st, wrapStore: func(st store.Store) store.Store {
		bw.Store = st
		return bw
	}})
	<-bw.first

	a.mustPutGroup(protocol.Group{Name: "fresh", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest})
	regA := a.mustRegister("fresh", "http://127.0.0.1:9")

	// A registration at B of the group created at A.
	regB, created, err := b.b.Register("fresh", protocol.Registration{Address: "http://127.0.0.1:10"})
	if err != nil || !created {
		t.Fatalf("register at B in the group created at A: created %v, %v; want created", created, err)
	}
	st, err := b.b.Group("fresh")
	if err != nil {
		t.Fatal(err)
	}
	if !b.b.Ready() {
		t.Error("B is not ready: the front door of the group it read from the store does not serve")
	}
	// The replica registered at A is read when named.
	if err := b.b.Drain("fresh", regA.ID); err != nil {
		t.Fatalf("drain at B of the replica registered at A: %v", err)
	}
	if s, err := replicaState(b.b, "fresh", regA.ID); err != nil || s != protocol.StateDraining {
		t.Errorf("replica registered at A, drained at B: %q %v; want %s", s, err, protocol.StateDraining)
	}
	if !slices.ContainsFunc(st.Replicas, func(r protocol.ReplicaStatus) bool { return r.ID == regB.ID }) {
		t.Errorf("status at B lacks the replica registered there: %+v", st.Replicas)
	}

	// What is not stored stays unknown.
	if _, err := b.b.Group("absent"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("group stored nowhere: %v, want ErrUnknownGroup", err)
	}
	if _, err := b.b.Group("Not-A-Name"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("invalid group name: %v, want ErrUnknownGroup", err)
	}
	if err := b.b.Drain("fresh", "r-absent"); !errors.Is(err, balancer.ErrUnknownReplica) {
		t.Errorf("replica stored nowhere: %v, want ErrUnknownReplica", err)
	}
}
