package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the name of the embedded store's file inside its directory.
const FileName = "fulcrum.db"

// openTimeout bounds the wait for the file lock held by another process.
const openTimeout = 2 * time.Second

// ErrInUse is wrapped by Open when another process holds the store.
var ErrInUse = errors.New("store: in use by another fulcrum process")

// Open opens (creating as needed) the embedded store <dir>/fulcrum.db,
// creating dir with mode 0700 if it does not exist. Only one process may
// have a store open: if another holds it, Open fails after a short wait
// with an error wrapping ErrInUse instead of blocking. Every committed
// Update is synced to disk before Update returns, so it survives a crash
// or kill -9.
func Open(dir string) (Store, error) {
	return open(dir, openTimeout)
}

func open(dir string, timeout time.Duration) (Store, error) {
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
	return &boltStore{db: db}, nil
}

// inUseError names the file another process holds.
type inUseError struct{ path string }

func (e *inUseError) Error() string {
	return fmt.Sprintf("store: %s is in use by another fulcrum process", e.path)
}

func (e *inUseError) Unwrap() error { return ErrInUse }

// boltStore is the Store kept in one bbolt file. bbolt syncs the file on
// every commit (NoSync is off), which is what makes commits durable.
type boltStore struct {
	db *bolt.DB
}

func (s *boltStore) View(fn func(Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s *boltStore) Update(fn func(Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s *boltStore) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// boltTx maps buckets to top-level bbolt buckets.
type boltTx struct {
	tx *bolt.Tx
}

func (t boltTx) Get(bucket, key string) ([]byte, error) {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil, ErrNotFound
	}
	// A cursor tells a missing key from an empty value, which Bucket.Get
	// does not promise to.
	k, v := b.Cursor().Seek([]byte(key))
	if k == nil || !bytes.Equal(k, []byte(key)) {
		return nil, ErrNotFound
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (t boltTx) Put(bucket, key string, value []byte) error {
	b, err := t.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return fmt.Errorf("store: bucket %q: %w", bucket, err)
	}
	// bbolt keeps a reference to value until commit; copy it so callers
	// may reuse their buffers.
	if err := b.Put([]byte(key), bytes.Clone(value)); err != nil {
		return fmt.Errorf("store: put %s/%s: %w", bucket, key, err)
	}
	return nil
}

func (t boltTx) Delete(bucket, key string) error {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	if err := b.Delete([]byte(key)); err != nil {
		return fmt.Errorf("store: delete %s/%s: %w", bucket, key, err)
	}
	return nil
}

func (t boltTx) List(bucket string, fn func(key string, value []byte) error) error {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil // a nested bucket; the store creates none
		}
		return fn(string(k), v)
	})
}
