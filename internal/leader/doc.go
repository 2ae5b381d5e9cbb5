// Package leader elects one analyzer leader per group among the fulcrum
// instances of a cluster, on etcd (concurrency.Election), and holds the
// rules of leadership.
//
// Two layers, as the rest of fulcrum: Core is one group's leadership as
// pure decisions (states Follower, Candidate, Leader, Deposed; the term;
// warm-up before planning), driven by events with their times and tested
// by scripts in testdata/; Elector is the concurrent layer on etcd: one
// session (a lease of the session TTL) per instance, one election per
// group under <prefix>leaders/<group>, a campaign per group in the
// background, a watch of every group's leader, and the session's Done
// watched so that a lost lease deposes the leader at once (a campaign does
// not notice an expired session by itself).
//
// The term of a leader is its election key's create revision: it grows
// with every new leader, in every group. Every write a leader makes goes
// through its Fence, a transaction conditioned on that key still having
// that create revision (Fence.Txn on the etcd client, Fence.Store around
// the etcd store), so that a deposed leader (frozen, cut off, or not
// yet aware of its loss) changes nothing.
//
//	e, err := leader.New(leader.Options{Client: cli, Instance: "fulcrum-a", SessionTTL: 3 * time.Second})
//	if err != nil { ... }
//	defer e.Close(ctx) // resigns every group
//	e.Join("prime", 500*time.Millisecond)
//	...
//	e.Report("prime")               // a load report arrived
//	if e.CanPlan("prime") {
//		if f, ok := e.Fence("prime"); ok {
//			_, _, _, err = f.Store(st).Txn(ctx, conds, ops) // leader.ErrDeposed: changed nothing
//		}
//	}
package leader
