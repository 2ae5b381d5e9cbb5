// Package replog is the ordered log of a replicated group (the MEAD
// paper's totally ordered group communication): the bridge
// appends each client request with AppendOrGet, which both orders and
// deduplicates it, and every replica's agent reads the entries in order
// with Watch and applies them one at a time.
//
// The contract, held by every engine and checked by replogtest:
//
//   - Order. Positions increase in the order of the appends' commits; they
//     may be sparse (etcd's revisions are cluster-wide). Watch delivers
//     every entry at or after its start exactly once, in position order,
//     or ends with an error: an entry is never skipped, and an entry that
//     cannot be decoded ends the watch with a *DecodeError naming its
//     position.
//   - Deduplication. One (session, seq) is appended at most once while its
//     session lives: a second AppendOrGet, concurrent or later, returns the
//     first one's position with existed = true. A session lives for
//     SessionTTL after its last use; then its dedup keys go, and the same
//     (session, seq) is a new request.
//   - Durability. An AppendOrGet that returned without an error is stored
//     durably (bbolt: fsynced before it returns; etcd: committed by a
//     quorum).
//   - Limits. A payload above Limits.MaxPayload is refused with a
//     *PayloadTooLargeError (413 at the edge) and never reaches the log; an
//     append that would take the group's untrimmed payload bytes above
//     Limits.MaxLogBytes is refused with a *LogFullError (507) until Trim
//     frees room.
//   - Trim. Trim(to) deletes the entries up to and including to; a Watch
//     whose start is at or below the trim point ends with a *TrimmedError
//     (errors.Is ErrTrimmed) naming both positions.
//
// The engines are boltlog (single node: one bbolt file, dense positions,
// group commit) and etcdlog (cluster mode: one etcd transaction orders and
// deduplicates; the put's revision is the position). docs/replication.md
// describes their keys and guarantees.
//
//	pos, existed, err := log.AppendOrGet(ctx, replog.Append{Session: "c1", Seq: 7, Payload: req, Origin: "fulcrum-a"})
//	...
//	for e, err := range log.Watch(ctx, applied+1) {
//		if err != nil { return err }
//		apply(e)
//	}
package replog
