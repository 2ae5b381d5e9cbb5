package boltstore

import (
	"bytes"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// SchemaVersion is the layout this code writes, recorded under the key
// "schema" of the bucket "meta":
//
//   - Schema 1 (files written before the schema key existed) kept one
//     top-level bucket per kind of record: "groups" (key <name>) and
//     "replicas" (key <group>/<id>), JSON values, no revisions.
//   - Schema 2 keeps every key in the bucket "kv", each record prefixed
//     with its ModRev and CreateRev (record.go), and the store's revision
//     under "rev" in "meta". Key k of a schema-1 bucket b becomes b/k, all
//     at revision 1: "groups/<name>" and "replicas/<group>/<id>", the keys
//     package groupstore uses.
//
// Open migrates a schema-1 file in one transaction, so a crash leaves it
// either migrated or untouched, and refuses a file of a schema newer than
// it knows.
const SchemaVersion = 2

// upgrade brings the file to SchemaVersion and returns its revision.
func upgrade(tx *bolt.Tx) (int64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		if err := migrate1(tx); err != nil {
			return 0, fmt.Errorf("migrate from schema 1: %w", err)
		}
		return readRev(tx), nil
	}
	raw := meta.Get(keySchema)
	v, err := strconv.Atoi(string(raw))
	if err != nil {
		return 0, fmt.Errorf("%w: schema version %q is not a number", errCorrupt, raw)
	}
	if v > SchemaVersion {
		return 0, fmt.Errorf("written with schema version %d, newer than this fulcrum knows (%d): run the fulcrum that wrote it, or a newer one", v, SchemaVersion)
	}
	if v < SchemaVersion {
		return 0, fmt.Errorf("%w: schema version %d with a meta bucket (schema 1 has none)", errCorrupt, v)
	}
	if tx.Bucket(bucketKV) == nil {
		return 0, fmt.Errorf("%w: bucket %q missing", errCorrupt, bucketKV)
	}
	if err := tx.Bucket(bucketKV).ForEach(func(k, v []byte) error {
		_, err := decode(k, v)
		return err
	}); err != nil {
		return 0, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return readRev(tx), nil
}

// migrate1 rewrites a schema-1 file (or a new, empty one) as schema 2.
func migrate1(tx *bolt.Tx) error {
	var old [][]byte
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		old = append(old, bytes.Clone(name))
		return nil
	}); err != nil {
		return err
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	kv, err := tx.CreateBucket(bucketKV)
	if err != nil {
		return err
	}
	var rev int64
	for _, name := range old {
		if bytes.Equal(name, bucketKV) {
			return fmt.Errorf("%w: bucket %q without a schema version", errCorrupt, name)
		}
		err := tx.Bucket(name).ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("%w: nested bucket %s/%s", errCorrupt, name, k)
			}
			rev = 1
			key := string(name) + "/" + string(k)
			return kv.Put([]byte(key), encode(store.KV{Key: key, Value: v, ModRev: 1, CreateRev: 1}))
		})
		if err != nil {
			return err
		}
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
	}
	if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
		return err
	}
	return writeRev(tx, rev)
}
