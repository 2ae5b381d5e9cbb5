// Package store is fulcrum's persistent state behind one small interface: a
// flat, ordered key/value space with a global revision, the model of etcd's
// v3 API, so that the embedded implementation (package boltstore, one bbolt
// file) and the cluster's (etcd) honour the same contract, held by one
// conformance suite (package storetest).
//
// The contract:
//
//   - Every transaction that changes something (puts a key, or deletes a
//     key that exists) advances the store's revision; all its changes carry
//     that revision. A transaction that changes nothing makes no revision.
//     In a store nobody else writes to (boltstore) the revision advances by
//     exactly one per such transaction; etcd's revision counts every change
//     of its cluster, under any prefix, so there revisions increase but
//     are sparse: callers compare revisions, they never count them.
//   - Every key has a ModRev (the revision of its last put) and a CreateRev
//     (the revision of the put that created it, since it was last absent).
//     An absent key has both 0, so CreateRevIs(key, 0) means "absent".
//   - Txn applies its ops atomically when every condition holds, and none of
//     them otherwise; on failure it returns the current state of each key
//     it compared. At most MaxTxnOps conditions and MaxTxnOps ops (etcd's
//     default --max-txn-ops); two ops of one transaction may not touch the
//     same key (etcd refuses that too).
//   - Watch delivers, in revision order, every change to a key under a
//     prefix from a given revision on; a start the store no longer has the
//     history for fails with ErrCompacted.
//
// Callers encode values themselves and choose their keys; the keys of the
// records fulcrum keeps are listed in package groupstore. Keys are
// relative: an etcd implementation puts them under its own prefix.
//
// Usage:
//
//	st, _ := boltstore.Open(dir)
//	defer st.Close()
//	ok, rev, kvs, err := st.Txn(ctx,
//		[]store.Cond{store.CreateRevIs("groups/prime", 0)}, // absent
//		[]store.Op{store.Put("groups/prime", data)})
package store
