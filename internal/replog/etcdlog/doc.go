// Package etcdlog is the cluster engine of replog: a group's log in etcd,
// under the deployment's prefix, shared by every instance.
//
// Keys (escaped with url.PathEscape, so that no group or session holds a
// "/"):
//
//	<prefix>log/<group>/<random id>.<size>   the encoded entry (replog.Encode); a plain key, never on a lease
//	<prefix>sess/<group>/<session>           the session's lease id (hex), on that lease
//	<prefix>sess/<group>/<session>/<seq>     empty, on the session's lease: the dedup index
//	<prefix>trim/<group>                     the trim point, a decimal revision
//
// One transaction orders and deduplicates an append: if the dedup key is
// absent, it puts the entry and the dedup key, and the put's revision is
// the entry's position (positions are etcd revisions: increasing, and
// sparse, since every change in the cluster takes one); otherwise it
// reads the dedup key, whose create revision is the first append's
// position. Log entries are never on a lease: a lapsed lease would delete
// entries that lagging replicas still need.
//
// Sessions: each session has one lease of SessionTTL (whole seconds, at
// least 2 s), granted by the first instance that uses the session and
// found by the others through the session key; an instance renews it
// (KeepAliveOnce) when it uses the session and its last renewal is a
// third of the TTL old. When the lease lapses, etcd deletes the session's
// dedup keys with it, and a request of that session is new again.
//
// Watch lists the group's entries from its start (pages sorted by
// revision, each read in one transaction with the trim point) and then
// watches etcd from the revision after the last list. If etcd's history
// has been compacted past the watch, it lists again from the next
// position: compaction loses no entry, since entries are keys until Trim
// deletes them. LowestNeeded says which revision the watches still read
// from history (a watch of a quiet group asks etcd for a progress
// notification every ProgressEvery, so that it moves on); package
// compaction publishes it, and docs/replication.md says how etcd is
// compacted.
//
// max_log_bytes is counted from the keys (each names its entry's size),
// recounted at most every RecountEvery and after each Trim, plus what this
// instance appended since: other instances' appends of the last
// RecountEvery are not seen, so the limit can be passed by that much.
package etcdlog
