// Package migrate copies a single node's state (every key of its embedded
// store) into another store, the etcd of cluster mode: `fulcrum migrate`.
//
// It is three steps, each usable alone:
//
//   - Decide (plan.go) is pure: from the source's keys and what the target
//     holds, it counts what a copy would write, per kind of record
//     (groups, replicas, blocks, ...), and refuses a target of another
//     schema version, or one that already holds fulcrum data unless forced.
//   - Copy (copy.go) writes the source's keys, values unchanged, in
//     transactions of at most store.MaxTxnOps puts and MaxTxnBytes. Unforced, each put is
//     conditioned on its key being absent, so a writer that appears
//     meanwhile stops the copy rather than being overwritten. Forced, it
//     overwrites the keys the source holds and never deletes any other.
//   - Verify (verify.go) reads every key back from the target and compares
//     it with the source.
//
// Revisions are not copied: the target numbers its own (a group's ETag
// changes across a migration).
//
//	kvs, _, _ := bolt.List(ctx, "")
//	p := migrate.Decide(kvs, boltstore.SchemaVersion, target, force)
//	if p.Refusal != nil { ... }
//	n, err := migrate.Copy(ctx, etcd, kvs, force)
//	v, err := migrate.Verify(ctx, etcd, kvs)
package migrate
