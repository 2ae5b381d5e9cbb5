// Package replagent is "fulcrum agent replicated": the agent beside each
// replica of a replicated group (docs/replication.md), in front of its
// unmodified server. It streams the group's log from the balancer, delivers
// the entries to its server one at a time in log order (seed 001's
// quiescence), posts each reply to the instance the entry names, and keeps
// its applied position durably in a bbolt file of its data directory.
//
// The parts:
//
//   - Core (core.go) decides, without I/O: it takes the stream's events in
//     order and answers what to do (deliver an entry, transfer state from a
//     peer, stop), keeps the last replies for reply requests (replies.go)
//     and queues the replies to post. It never skips an entry: an entry is
//     delivered, was applied before, or the agent stops naming its
//     position.
//   - Agent (agent.go) runs a Core: one goroutine takes the events
//     (LogSource; HTTPSource streams GET /v1/groups/{g}/log), delivers
//     (Deliverer; HTTPDeliverer for HTTP servers), stores the applied
//     position (Store) and serves checkpoints between two entries
//     (Handler); a poster posts replies in batches; a reporter posts the
//     applied position about once a second to every admin URL.
//   - Outgoing calls (outcall.go): a call the server sends through the
//     agent's listener as through an HTTP proxy while an entry is being
//     delivered is posted, keyed "<group>/<position>/<index>", to the
//     balancer's outcalls route (Outcaller; AdminClient.PostOutcall), which
//     calls the callee once for all the replicas.
//
// The places where seed 001's faults strike are single places, each a
// failpoint (docs/testing.md): before taking the next entry (the end of
// Agent.deliver, once the last entry is stored), after taking it and
// before delivering it (the start of Agent.deliver), while writing the
// request to the server (serverConn.Write: the connections of the
// deliveries carry nothing else) and while reading its reply
// (HTTPDeliverer.readReply).
//
// Usage (what the CLI does, after the monitor registered the replica with
// its agent's listen address):
//
//	st, _ := replagent.OpenStore(dataDir, group)
//	d, _ := replagent.NewHTTP(target, replagent.HTTPOptions{})
//	admin := &replagent.AdminClient{Group: group, Token: token}
//	a, _ := replagent.New(replagent.Options{Group: group, Self: id, Deliverer: d,
//		Source: &replagent.HTTPSource{Admins: admins, Group: group, Token: token},
//		Admin: admin, Admins: admins, Store: st})
//	proxy, _ := replagent.NewProxy(target)
//	go http.Serve(ln, a.Handler(proxy))
//	err := a.Run(ctx)
package replagent
