package groupstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Key prefixes.
const (
	GroupsPrefix   = "groups/"
	ReplicasPrefix = "replicas/"
)

// GroupKey is the key of group name.
func GroupKey(name string) string { return GroupsPrefix + name }

// ReplicaKey is the key of replica id of group.
func ReplicaKey(group, id string) string { return ReplicasPrefix + group + "/" + id }

// ReplicasOf is the prefix of group's replicas.
func ReplicasOf(group string) string { return ReplicasPrefix + group + "/" }

// Records persists groups and replicas. Safe for concurrent use.
type Records struct {
	st store.Store
}

// New returns the records kept in st.
func New(st store.Store) *Records { return &Records{st: st} }

// Snapshot is everything persisted, as of revision Rev.
type Snapshot struct {
	Groups   []protocol.Group
	Replicas []protocol.Replica
	Blocks   []Block
	// Health are the health states a cluster's leaders wrote (health.go).
	Health []Health
	Rev    int64
	// GroupRevs are the groups' revisions (revision.go), by name.
	GroupRevs map[string]int64
}

// Load reads every group, replica and block, at one revision: one List of
// the whole store, so that writers elsewhere (other instances on etcd)
// never make it retry.
func (r *Records) Load() (Snapshot, error) { return r.load(nil) }

// LoadSkipping is Load, but a record that cannot be decoded is passed to
// skip (its key and the error) and left out, instead of failing the load:
// for an instance following a store that others write too.
func (r *Records) LoadSkipping(skip func(key string, err error)) (Snapshot, error) {
	return r.load(skip)
}

// load is Load; a record that cannot be decoded fails it when skip is nil,
// and is passed to skip otherwise. Keys outside the three kinds are not
// groupstore's and are passed over.
func (r *Records) load(skip func(key string, err error)) (Snapshot, error) {
	kvs, rev, err := r.st.List(context.Background(), "")
	if err != nil {
		return Snapshot{}, fmt.Errorf("groupstore: load: %w", err)
	}
	s := Snapshot{Rev: rev, GroupRevs: map[string]int64{}}
	for _, kv := range kvs {
		var (
			kind string
			into any
		)
		var g protocol.Group
		var rep protocol.Replica
		var b Block
		var h Health
		switch {
		case strings.HasPrefix(kv.Key, GroupsPrefix):
			kind, into = "group", &g
		case strings.HasPrefix(kv.Key, ReplicasPrefix):
			kind, into = "replica", &rep
		case strings.HasPrefix(kv.Key, BlocksPrefix):
			kind, into = "block", &b
		case strings.HasPrefix(kv.Key, HealthPrefix):
			kind, into = "health", &h
		default:
			continue
		}
		if err := json.Unmarshal(kv.Value, into); err != nil {
			if skip == nil {
				return Snapshot{}, fmt.Errorf("groupstore: corrupt %s record %s: %w", kind, kv.Key, err)
			}
			skip(kv.Key, err)
			continue
		}
		switch kind {
		case "group":
			s.Groups = append(s.Groups, g)
			s.GroupRevs[g.Name] = kv.ModRev
		case "replica":
			s.Replicas = append(s.Replicas, rep)
		case "block":
			s.Blocks = append(s.Blocks, b)
		case "health":
			s.Health = append(s.Health, h)
		}
	}
	return s, nil
}

// PutGroup stores g (replacing any group of the same name).
func (r *Records) PutGroup(g protocol.Group) error {
	return r.put(GroupKey(g.Name), g)
}

// PutReplica stores rep.
func (r *Records) PutReplica(rep protocol.Replica) error {
	return r.put(ReplicaKey(rep.Group, rep.ID), rep)
}

func (r *Records) put(key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("groupstore: encode %s: %w", key, err)
	}
	if _, _, _, err := r.st.Txn(context.Background(), nil, []store.Op{store.Put(key, data)}); err != nil {
		return fmt.Errorf("groupstore: put %s: %w", key, err)
	}
	return nil
}

// DeleteReplica removes a replica.
func (r *Records) DeleteReplica(group, id string) error {
	key := ReplicaKey(group, id)
	if _, _, _, err := r.st.Txn(context.Background(), nil, []store.Op{store.Delete(key), deleteHealth(group, id)}); err != nil {
		return fmt.Errorf("groupstore: delete %s: %w", key, err)
	}
	return nil
}

// DeleteGroup removes a group, its blocks and all its replicas: the replicas in
// transactions of at most store.MaxTxnOps deletes, then the group (with
// any replica registered meanwhile). A failure part way leaves the group
// with fewer replicas; deleting it again finishes the job.
func (r *Records) DeleteGroup(name string) error {
	return r.deleteGroup(name, nil)
}

// DeleteGroupAt deletes group name as DeleteGroup does if its record is at
// revision expected, and returns a *ConflictError with the current
// revision otherwise. The revision is checked before the first deletion
// and again, atomically, by the transaction that deletes the record; the
// first check is the one that matters unless the group has more replicas
// than one transaction deletes and another writer changes the record in
// between (then some of its replicas are gone and the record stays).
func (r *Records) DeleteGroupAt(name string, expected int64) error {
	cur, err := r.GroupRevision(name)
	if err != nil {
		return err
	}
	if cur != expected {
		return &ConflictError{Group: name, Expected: expected, Current: cur}
	}
	return r.deleteGroup(name, &expected)
}

// deleteGroup deletes group name; the record's deletion is conditioned on
// revision *expected when expected is not nil.
func (r *Records) deleteGroup(name string, expected *int64) error {
	ctx := context.Background()
	kvs, _, err := r.st.List(ctx, ReplicasOf(name))
	if err != nil {
		return fmt.Errorf("groupstore: delete group %s: %w", name, err)
	}
	// Leave room in the last transaction for the group's own deletes.
	for len(kvs) > store.MaxTxnOps-4 {
		n := min(len(kvs), store.MaxTxnOps)
		ops := make([]store.Op, n)
		for i, kv := range kvs[:n] {
			ops[i] = store.Delete(kv.Key)
		}
		if _, _, _, err := r.st.Txn(ctx, nil, ops); err != nil {
			return fmt.Errorf("groupstore: delete replicas of group %s: %w", name, err)
		}
		kvs = kvs[n:]
	}
	var conds []store.Cond
	if expected != nil {
		conds = []store.Cond{store.ModRevIs(GroupKey(name), *expected)}
	}
	// The prefix deletes take the remaining replicas (and any registered
	// meanwhile) with the record, in one transaction.
	ops := []store.Op{store.Delete(GroupKey(name)), store.DeletePrefix(ReplicasOf(name)), store.DeletePrefix(BlocksOf(name)), store.DeletePrefix(HealthOf(name)), store.DeletePrefix(AffinityOf(name))}
	ok, _, cur, err := r.st.Txn(ctx, conds, ops)
	if err != nil {
		return fmt.Errorf("groupstore: delete group %s: %w", name, err)
	}
	if !ok {
		return &ConflictError{Group: name, Expected: *expected, Current: cur[0].ModRev}
	}
	return nil
}

// GetGroup reads one group; a missing one is an error wrapping
// store.ErrNotFound.
func (r *Records) GetGroup(name string) (protocol.Group, error) {
	kv, err := r.st.Get(context.Background(), GroupKey(name))
	if err != nil {
		return protocol.Group{}, fmt.Errorf("groupstore: group %s: %w", name, err)
	}
	var g protocol.Group
	if err := json.Unmarshal(kv.Value, &g); err != nil {
		return protocol.Group{}, fmt.Errorf("groupstore: corrupt group record %s: %w", kv.Key, err)
	}
	return g, nil
}
