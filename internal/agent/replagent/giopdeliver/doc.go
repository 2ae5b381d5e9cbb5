// Package giopdeliver is a replicated agent's delivery to a GIOP servant
// (docs/replication.md): it hands the ordered requests of a replicated
// group's log, one at a time, to the unmodified servant the agent stands
// in front of, and transfers the servant's state through
// FT::Checkpointable. It implements the method set of replagent's
// Deliverer.
//
// A Deliverer keeps one connection to the servant, named by a corbaloc URL
// or a stringified IOR, opened at the first call and again after it
// breaks. Deliver decodes the entry's GIOP Request (the whole message the
// bridge took, in the client's GIOP version and byte order, with the
// bridge's service contexts), sends it with its request id replaced by the
// connection's own counter and its target by the servant's object key, and
// waits for the Reply. A oneway request is sent as SYNC_WITH_TARGET (GIOP
// 1.2; response_expected in 1.0 and 1.1) so that the next entry is not
// delivered before it has run. The Reply is returned whole, with the
// entry's request id put back, so the replies of every replica to one
// entry are the same bytes.
//
// A LOCATION_FORWARD (or _PERM) reply is followed once: the request is sent
// again to the reference it carries, which later calls use too. A second
// forward within one call is an error. A CloseConnection before the reply
// means the request did not run: it is sent once more on a new connection.
// Any other failure is an error: the agent stops and its replica leaves
// the group (it never skips an entry).
//
// State calls get_state and SetState set_state (FT::Checkpointable). A
// servant raising FT::NoStateAvailable, or one without the operation
// (BAD_OPERATION, NO_IMPLEMENT), cannot transfer state: ErrNoState.
// CanCheckpoint asks _is_a("IDL:omg.org/FT/Checkpointable:1.0"), and
// tries get_state when the servant cannot answer _is_a.
//
// Usage:
//
//	d, err := giopdeliver.New("corbaloc:iiop:1.2@127.0.0.1:2809/Counter", giopdeliver.Options{})
//	if err != nil { ... }
//	defer d.Close()
//	rep, err := d.Deliver(ctx, pos, req) // rep.Body is the servant's GIOP Reply
package giopdeliver
