package groupstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A group's revision is the store revision at which its record
// (groups/<name>) was last put: the ModRev of that key, 0 when the group
// is absent. Only writes of the group's own record change it; its
// replicas and blocks are other keys and leave it alone. Store revisions
// only grow, so a group's revision does too, across restarts.

// ErrConflict is wrapped by the conditional writes when the group's record
// is no longer at the expected revision.
var ErrConflict = errors.New("groupstore: the group's record is not at the expected revision")

// ConflictError is a conditional write that found the group's record at
// another revision. It wraps ErrConflict.
type ConflictError struct {
	Group string
	// Expected is the revision the write was conditioned on; Current is
	// the record's revision when the store refused it (0: absent).
	Expected, Current int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("groupstore: group %s is at revision %d, not %d", e.Group, e.Current, e.Expected)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// GroupRevision returns group name's revision: the store revision its
// record was last put at, or 0 when it is absent.
func (r *Records) GroupRevision(name string) (int64, error) {
	kv, err := r.st.Get(context.Background(), GroupKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("groupstore: group %s: %w", name, err)
	}
	return kv.ModRev, nil
}

// PutGroupAt stores g if its record is at revision expected (0: absent),
// in one transaction conditioned on that revision, and returns the new
// revision. When the record is elsewhere it writes nothing and returns a
// *ConflictError with the record's current revision.
func (r *Records) PutGroupAt(g protocol.Group, expected int64) (int64, error) {
	key := GroupKey(g.Name)
	data, err := json.Marshal(g)
	if err != nil {
		return 0, fmt.Errorf("groupstore: encode %s: %w", key, err)
	}
	ok, rev, kvs, err := r.st.Txn(context.Background(), []store.Cond{store.ModRevIs(key, expected)}, []store.Op{store.Put(key, data)})
	if err != nil {
		return 0, fmt.Errorf("groupstore: put %s: %w", key, err)
	}
	if !ok {
		return 0, &ConflictError{Group: g.Name, Expected: expected, Current: kvs[0].ModRev}
	}
	return rev, nil
}
