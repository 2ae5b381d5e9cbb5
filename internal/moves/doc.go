// Package moves keeps the planned moves of cluster mode in etcd, so that
// a client sent back by its replica finds its move at whichever instance's
// front door it comes back to, not only at the leader's.
//
// The analyzer leader of a group commits the moves it planned before the
// advisory naming their clients is answered (Commit); any instance's front
// door that receives a rebinding client it has no move for reads that
// client's move (Lookup); the leader deletes a move once its client has
// bound (Completed). Keys and values:
//
//	<prefix>moves/<group>/<client>  {"to":"r2","term":812,"epoch":3,"planned_at":"2026-11-27T09:00:00Z"}
//
// with the group and the client id escaped (EscapeSegment) so that any id
// is one key segment. Every key is on a lease: a move is of use only for
// the few report intervals the analyzer keeps it (its life, given to
// Commit), so its key expires on its own and nobody has to clean up after
// a leader that died. A Store grants one lease per length of life and
// attaches every batch committed while that lease has at least one life
// left to it, so that leases cost one etcd write per life, not one per
// batch or per key: a key lives between one and two lives (rounded up to
// whole seconds, at least MinLeaseTTL).
//
// Every write is fenced by the leader's term (leader.Fence.Txn): a
// deposed leader commits and deletes nothing. A batch larger than
// MovesPerTxn (etcd's --max-txn-ops, 128, less the fence's own operation)
// is split into several fenced transactions. Commit takes the
// group's whole set of pending moves at every step and writes only those
// not yet committed in the term, so a steady plan costs no writes.
//
// Lookup is a linearizable read bounded to LookupTimeout: a front door
// waits that long at most before it picks as if there were no move.
//
//	ms, err := moves.New(moves.Options{Client: st.Client(), Prefix: st.Prefix()})
//	...
//	// leader, at each step, before the advisories go out:
//	err = ms.Commit(ctx, fence, "prime", 4*interval, planned) // leader.ErrDeposed: nothing written
//	// any instance, for a rebinding client it has no move for:
//	to, ok, err := ms.Lookup(ctx, "prime", client)
//	// leader, once the client has bound:
//	err = ms.Completed(ctx, fence, "prime", client)
package moves
