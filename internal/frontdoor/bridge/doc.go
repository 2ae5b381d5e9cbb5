// Package bridge is the HTTP front door of a replicated group (binding
// replicated, docs/replication.md): the bridge through which ordinary
// HTTP clients, many and concurrent, reach a group whose replicas apply
// every request in one order.
//
// Each request is identified (session.go), read whole up to the group's
// max_payload, stamped with a time and a random seed, and ordered through
// the group's hub (Orderer.Order: appended to the group's log, applied by
// every replica); the client gets the first replica's reply with the
// entry's position in Fulcrum-Position. A request matching one of the
// group's read_only patterns skips the log: it is proxied to one live
// replica, picked by the group's strategy, that has applied the session's
// last write (readonly.go).
//
// Errors are answered with the JSON body the other front doors use,
// {"error": {"code", "message", "group", "reason"}} (errors.go):
//
//	400 bad_request         a bad Fulcrum-Session, Fulcrum-Sequence or Idempotency-Key; a target that is not a path
//	405 method_not_allowed  CONNECT
//	409 reply_expired       a retried request whose reply no live replica still has
//	413 payload_too_large   the request is above max_payload; nothing was appended
//	502 bad_gateway         a read-only call the replica did not answer
//	503 no_replica          no live replica (or none caught up, for read-only calls)
//	503 overloaded          every caught-up replica is at max_inflight (read-only calls)
//	503 log_unavailable     the log failed
//	504 gateway_timeout     no reply within the group's request timeout
//	507 log_full            the log is at max_log_bytes
//
// The server is net/http's (HTTP/1.1, h2c, and h2 over TLS when
// Options.TLS is set); Serve, Shutdown and Close follow http.Server's
// contract, as httpdoor.Server does.
//
//	srv := bridge.New(group, hub, bridge.Options{Logger: log})
//	go srv.Serve(ln)
//	...
//	err := srv.Shutdown(ctx)
package bridge
