package store

import (
	"context"
	"errors"
	"fmt"
)

// MaxTxnOps bounds the conditions and the ops of one transaction, as etcd's
// --max-txn-ops does by default.
const MaxTxnOps = 128

// Errors of every implementation.
var (
	// ErrNotFound is returned by Get for an absent key.
	ErrNotFound = errors.New("store: not found")
	// ErrCompacted is returned by Watch when the history from the asked
	// revision is no longer kept.
	ErrCompacted = errors.New("store: required revision has been compacted")
	// ErrTooManyOps is wrapped by Txn when a transaction has more than
	// MaxTxnOps conditions or ops.
	ErrTooManyOps = errors.New("store: too many operations in one transaction")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store: closed")
)

// Store is a transactional key/value store with revisions. Safe for
// concurrent use.
type Store interface {
	// Get returns key's value and revisions, or ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)
	// List returns every key starting with prefix, in byte order of their
	// keys, and the store's revision they were read at.
	List(ctx context.Context, prefix string) (kvs []KV, rev int64, err error)
	// Txn applies ops atomically if every condition holds. ok tells
	// whether they held; rev is the store's revision after the
	// transaction; on failure kvs holds the current state of the compared
	// keys, in the order of conds (an absent key as KV{Key: key}). A
	// transaction over the limits, with an empty key, or with two ops on
	// one key fails with an error and applies nothing. A committed change
	// is durable when Txn returns.
	Txn(ctx context.Context, conds []Cond, ops []Op) (ok bool, rev int64, kvs []KV, err error)
	// Watch delivers the changes to keys under prefix from revision
	// fromRev on (0: from the next change), in revision order, the events
	// of one revision in one WatchResponse. It fails with an error
	// wrapping ErrCompacted if the store no longer has the history from
	// fromRev. The channel is closed when ctx ends or the store closes;
	// a watcher that falls behind the kept history gets a last response
	// whose Err wraps ErrCompacted.
	Watch(ctx context.Context, prefix string, fromRev int64) (<-chan WatchResponse, error)
	// Close releases the store and ends its watches.
	Close() error
}

// KV is one key's value and revisions.
type KV struct {
	Key   string
	Value []byte
	// ModRev is the revision of the key's last put (of its deletion, in a
	// delete Event).
	ModRev int64
	// CreateRev is the revision of the put that created the key.
	CreateRev int64
}

// Target is what a condition compares.
type Target int

// Targets of a condition.
const (
	TargetValue Target = iota + 1
	TargetModRev
	TargetCreateRev
)

func (t Target) String() string {
	switch t {
	case TargetValue:
		return "value"
	case TargetModRev:
		return "mod_rev"
	case TargetCreateRev:
		return "create_rev"
	}
	return fmt.Sprintf("target(%d)", int(t))
}

// Cond is a condition of a transaction: key's Target equals Value (for
// TargetValue) or Rev. An absent key has revisions 0 and matches no value.
type Cond struct {
	Key    string
	Target Target
	Value  []byte
	Rev    int64
}

// ValueIs holds when key exists with value v.
func ValueIs(key string, v []byte) Cond { return Cond{Key: key, Target: TargetValue, Value: v} }

// ModRevIs holds when key's last put was at rev (0: key is absent).
func ModRevIs(key string, rev int64) Cond { return Cond{Key: key, Target: TargetModRev, Rev: rev} }

// CreateRevIs holds when key was created at rev (0: key is absent).
func CreateRevIs(key string, rev int64) Cond {
	return Cond{Key: key, Target: TargetCreateRev, Rev: rev}
}

// Holds tells whether c holds for kv, the current state of c.Key (KV{}
// when absent). Implementations share it so that they compare alike.
func (c Cond) Holds(kv KV) bool {
	switch c.Target {
	case TargetValue:
		return kv.CreateRev != 0 && string(kv.Value) == string(c.Value)
	case TargetModRev:
		return kv.ModRev == c.Rev
	case TargetCreateRev:
		return kv.CreateRev == c.Rev
	}
	return false
}

// OpKind is what an Op does.
type OpKind int

// Kinds of op.
const (
	OpPut OpKind = iota + 1
	OpDelete
	OpDeletePrefix
)

// Op is one change of a transaction.
type Op struct {
	Kind OpKind
	// Key is the key put or deleted, or the prefix deleted.
	Key   string
	Value []byte
}

// Put sets key to value.
func Put(key string, value []byte) Op { return Op{Kind: OpPut, Key: key, Value: value} }

// Delete removes key; deleting an absent key changes nothing.
func Delete(key string) Op { return Op{Kind: OpDelete, Key: key} }

// DeletePrefix removes every key starting with prefix (which must not be
// empty: deleting everything is not an op).
func DeletePrefix(prefix string) Op { return Op{Kind: OpDeletePrefix, Key: prefix} }

// EventType is what happened to a key.
type EventType int

// Event types.
const (
	EventPut EventType = iota + 1
	EventDelete
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "put"
	case EventDelete:
		return "delete"
	}
	return fmt.Sprintf("event(%d)", int(t))
}

// Event is one change: a put (KV is the key's new state) or a delete (KV
// holds the key and, as ModRev, the revision of the deletion).
type Event struct {
	Type EventType
	KV   KV
}

// WatchResponse is the events of one revision, or the error that ended
// the watch (the last response before the channel closes).
type WatchResponse struct {
	Rev    int64
	Events []Event
	Err    error
}
