package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Buckets of schema 2.
var (
	// bucketMeta holds the schema version (keySchema) and the store's
	// revision (keyRev).
	bucketMeta = []byte("meta")
	// bucketKV holds every key, its value prefixed with its ModRev and
	// CreateRev (record layout below).
	bucketKV = []byte("kv")

	keySchema = []byte("schema")
	keyRev    = []byte("rev")
)

// A record in bucketKV is the key's ModRev and CreateRev, 8 bytes each,
// big-endian, then its value.
const headerLen = 16

func encode(kv store.KV) []byte {
	b := make([]byte, headerLen+len(kv.Value))
	binary.BigEndian.PutUint64(b[0:8], uint64(kv.ModRev))
	binary.BigEndian.PutUint64(b[8:16], uint64(kv.CreateRev))
	copy(b[headerLen:], kv.Value)
	return b
}

// decode copies a record out of bbolt's memory, which is valid only for
// the life of the transaction.
func decode(k, v []byte) (store.KV, error) {
	if len(v) < headerLen {
		return store.KV{}, fmt.Errorf("corrupt record %q: %d bytes, want at least %d", k, len(v), headerLen)
	}
	return store.KV{
		Key:       string(k),
		ModRev:    int64(binary.BigEndian.Uint64(v[0:8])),
		CreateRev: int64(binary.BigEndian.Uint64(v[8:16])),
		Value:     append([]byte{}, v[headerLen:]...),
	}, nil
}

// getKV reads key; found is false when it is absent (or its record is
// unreadable, which Open's check rules out).
func getKV(b *bolt.Bucket, key string) (kv store.KV, found bool) {
	v := b.Get([]byte(key))
	if v == nil {
		return store.KV{}, false
	}
	kv, err := decode([]byte(key), v)
	return kv, err == nil
}

func readRev(tx *bolt.Tx) int64 {
	v := tx.Bucket(bucketMeta).Get(keyRev)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func writeRev(tx *bolt.Tx, rev int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(rev))
	if err := tx.Bucket(bucketMeta).Put(keyRev, b[:]); err != nil {
		return fmt.Errorf("write revision: %w", err)
	}
	return nil
}

var errCorrupt = errors.New("corrupt store")
