// Package store is fulcrum's persistent state behind one small interface:
// a transactional key/value store with named buckets. The embedded
// implementation (Open) keeps it in a bbolt file; an etcd implementation can
// map buckets to key prefixes. Callers encode values themselves.
package store

import "errors"

// ErrNotFound is returned by Tx.Get for a missing key.
var ErrNotFound = errors.New("store: not found")

// Store is a transactional key/value store.
type Store interface {
	// View runs fn in a read-only transaction.
	View(fn func(Tx) error) error
	// Update runs fn in a read-write transaction, committed when fn returns
	// nil and rolled back otherwise. Committed data is durable.
	Update(fn func(Tx) error) error
	// Close releases the store.
	Close() error
}

// Tx is one transaction. Not safe for concurrent use; valid only inside
// the function it was passed to. Byte slices returned by Get and List are
// valid only for the life of the transaction.
type Tx interface {
	// Get returns the value of key in bucket, or ErrNotFound.
	Get(bucket, key string) ([]byte, error)
	// Put sets key in bucket (creating the bucket as needed).
	Put(bucket, key string, value []byte) error
	// Delete removes key from bucket; deleting a missing key is not an
	// error.
	Delete(bucket, key string) error
	// List calls fn for every key of bucket in key order; a missing bucket
	// has no keys. An error from fn stops the walk and is returned.
	List(bucket string, fn func(key string, value []byte) error) error
}
