package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// FileName is the name of the store's file inside its directory.
const FileName = "fulcrum.db"

// openTimeout bounds the wait for the file lock held by another process.
const openTimeout = 2 * time.Second

// DefaultHistory is how many revisions' events a store keeps in memory
// for Watch.
const DefaultHistory = 1024

// ErrInUse is wrapped by Open when another process holds the store.
var ErrInUse = errors.New("store: in use by another fulcrum process")

// Store is the store kept in one bbolt file. bbolt syncs the file on every
// commit (NoSync is off), which is what makes commits durable. Safe for
// concurrent use.
type Store struct {
	db   *bolt.DB
	path string

	// mu orders commits with their history: a transaction's events are
	// appended, and watchers woken, before the next transaction commits.
	mu      sync.Mutex
	hist    history
	changed chan struct{} // closed and replaced at every commit
	closed  bool
	done    chan struct{} // closed by Close
	watches sync.WaitGroup
}

// Open opens (creating as needed) the store <dir>/fulcrum.db, creating dir
// with mode 0700 if it does not exist, and migrates a file written by an
// older fulcrum (schema.go). Only one process may have a store open: if
// another holds it, Open fails after a short wait with an error wrapping
// ErrInUse instead of blocking. Every committed Txn is synced to disk
// before Txn returns, so it survives a crash or kill -9. Watch history
// starts at Open: earlier revisions are compacted.
func Open(dir string) (*Store, error) {
	return open(dir, openTimeout, DefaultHistory)
}

func open(dir string, timeout time.Duration, keep int) (*Store, error) {
	if dir == "" {
		return nil, errors.New("store: empty data directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, &inUseError{path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	var rev int64
	if err := db.Update(func(tx *bolt.Tx) error {
		var err error
		rev, err = upgrade(tx)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return &Store{
		db: db, path: path,
		hist:    history{keep: keep, compacted: rev},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}, nil
}

// inUseError names the file another process holds.
type inUseError struct{ path string }

func (e *inUseError) Error() string {
	return fmt.Sprintf("store: %s is in use by another fulcrum process", e.path)
}

func (e *inUseError) Unwrap() error { return ErrInUse }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	if err := ctx.Err(); err != nil {
		return store.KV{}, err
	}
	var kv store.KV
	var found bool
	err := s.db.View(func(tx *bolt.Tx) error {
		kv, found = getKV(tx.Bucket(bucketKV), key)
		return nil
	})
	if err != nil {
		return store.KV{}, s.wrap("get", err)
	}
	if !found {
		return store.KV{}, fmt.Errorf("%w: %q", store.ErrNotFound, key)
	}
	return kv, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]store.KV, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var kvs []store.KV
	var rev int64
	err := s.db.View(func(tx *bolt.Tx) error {
		rev = readRev(tx)
		c := tx.Bucket(bucketKV).Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			kv, err := decode(k, v)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv)
		}
		return nil
	})
	if err != nil {
		return nil, 0, s.wrap("list", err)
	}
	return kvs, rev, nil
}

// Txn implements store.Store.
func (s *Store) Txn(ctx context.Context, conds []store.Cond, ops []store.Op) (bool, int64, []store.KV, error) {
	if err := store.CheckTxn(conds, ops); err != nil {
		return false, 0, nil, err
	}
	if err := ctx.Err(); err != nil {
		return false, 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, 0, nil, store.ErrClosed
	}
	var (
		ok     = true
		rev    int64
		failed []store.KV
		events []store.Event
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV)
		rev = readRev(tx)
		for _, c := range conds {
			if kv, _ := getKV(b, c.Key); !c.Holds(kv) {
				ok = false
			}
		}
		if !ok {
			for _, c := range conds {
				kv, _ := getKV(b, c.Key)
				kv.Key = c.Key
				failed = append(failed, kv)
			}
			return nil
		}
		next := rev + 1
		for _, op := range ops {
			evs, err := apply(b, op, next)
			if err != nil {
				return err
			}
			events = append(events, evs...)
		}
		if len(events) == 0 {
			return nil
		}
		rev = next
		return writeRev(tx, next)
	})
	if err != nil {
		return false, 0, nil, s.wrap("txn", err)
	}
	if len(events) > 0 {
		s.hist.append(rev, events)
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return ok, rev, failed, nil
}

// apply applies one op at revision rev and returns its events.
func apply(b *bolt.Bucket, op store.Op, rev int64) ([]store.Event, error) {
	switch op.Kind {
	case store.OpPut:
		create := rev
		if old, found := getKV(b, op.Key); found {
			create = old.CreateRev
		}
		kv := store.KV{Key: op.Key, Value: bytes.Clone(op.Value), ModRev: rev, CreateRev: create}
		if kv.Value == nil {
			kv.Value = []byte{}
		}
		if err := b.Put([]byte(op.Key), encode(kv)); err != nil {
			return nil, fmt.Errorf("put %q: %w", op.Key, err)
		}
		return []store.Event{{Type: store.EventPut, KV: kv}}, nil
	case store.OpDelete:
		if _, found := getKV(b, op.Key); !found {
			return nil, nil
		}
		if err := b.Delete([]byte(op.Key)); err != nil {
			return nil, fmt.Errorf("delete %q: %w", op.Key, err)
		}
		return []store.Event{{Type: store.EventDelete, KV: store.KV{Key: op.Key, ModRev: rev}}}, nil
	default: // store.OpDeletePrefix; CheckTxn refused other kinds
		var keys [][]byte
		c := b.Cursor()
		p := []byte(op.Key)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		evs := make([]store.Event, 0, len(keys))
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return nil, fmt.Errorf("delete %q: %w", k, err)
			}
			evs = append(evs, store.Event{Type: store.EventDelete, KV: store.KV{Key: string(k), ModRev: rev}})
		}
		return evs, nil
	}
}

// Close implements store.Store: it ends every watch, waits for their
// goroutines, and closes the file. Closing twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.watches.Wait()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Compact drops the watch history of revisions up to and including rev
// (at most the current revision), as etcd's compaction does: a watch from
// rev or before then fails with store.ErrCompacted.
func (s *Store) Compact(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hist.compact(min(rev, s.hist.last()))
}

// wrap names the operation of a bbolt error, and maps a closed file to
// store.ErrClosed.
func (s *Store) wrap(op string, err error) error {
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return fmt.Errorf("store: %s: %w", op, store.ErrClosed)
	}
	return fmt.Errorf("store: %s %s: %w", op, s.path, err)
}
