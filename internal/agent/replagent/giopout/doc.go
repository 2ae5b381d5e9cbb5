// Package giopout takes a replicated GIOP servant's outgoing calls for its
// agent (replicated callers, docs/agents.md): the agent listens for GIOP
// besides HTTP and publishes a reference to that listener, which the
// servant uses instead of its callee's (fulcrum backend relay --giop
// --next <that reference>).
//
// Every Request that comes to the listener is one outgoing call of the
// servant. The Server hands it, as a protocol.Outcall with Method
// protocol.OutcallMethodGIOP, the callee's reference as URL and the whole
// Request message as Body, to its Caller (the agent's Outcall, which keys
// it by the entry being delivered and posts it to the balancer; its
// replagent.ErrNoEntry is wrapped as this package's ErrNoEntry). The
// balancer calls the callee once per key and returns the callee's Reply;
// the Server answers the servant with it under the servant's request id.
// Whatever object key the servant's request names, it goes to the one
// callee the Server was made for.
//
// When the call cannot be made the servant gets a system exception:
// BAD_INV_ORDER (COMPLETED_NO) when no entry is being delivered (the call
// would have no key that is the same on every replica), TRANSIENT
// (COMPLETED_MAYBE) when no balancer answered or the callee could not be
// reached. A LocateRequest is answered OBJECT_HERE. Requests of one
// connection are handled one after another, in order.
//
// Usage:
//
//	call := func(ctx context.Context, c protocol.Outcall) (protocol.OutcallReply, error) {
//		r, err := agent.Outcall(ctx, c)
//		if errors.Is(err, replagent.ErrNoEntry) {
//			err = fmt.Errorf("%w: %w", giopout.ErrNoEntry, err)
//		}
//		return r, err
//	}
//	s, err := giopout.New(calleeIOR, call, giopout.Options{})
//	if err != nil { ... }
//	go s.Serve(ln)
//	ref := s.Reference("127.0.0.1", port) // the servant's --next
//	defer s.Close()
package giopout
