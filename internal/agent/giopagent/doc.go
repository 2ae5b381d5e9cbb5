// Package giopagent is fulcrum's GIOP side-car: a load monitor in front of
// an unmodified ORB server (the TAO paper §3.2, steps 8–11 of the load-advisory
// cycle, carried out beside the replica instead of inside it).
//
// The agent listens for client connections and opens one connection to the
// target server for each; it passes GIOP messages through both ways
// untouched, reading only their headers and request ids:
//
//   - A two-way Request is measured with the Monitor (monitor.Begin, with
//     the client connection's remote address as the client id) from its
//     first message until its Reply, or its Reply's last fragment, has
//     passed back. Calls in flight, the call rate, latency and the
//     per-client rates thus reach the balancer in the monitor's reports.
//   - When the Monitor sends the client back (a high advisory naming it or
//     choosing it for the shed amount, once per advisory epoch; or drain),
//     the agent answers that Request itself with a Reply of status
//     LOCATION_FORWARD carrying the group's reference, in the request's
//     GIOP version and byte order, and the target never sees it. The
//     client's ORB re-issues the call to the group's front door, which binds
//     it to a less loaded replica (CORBA's forwarding rules, the TAO paper
//     §3.3.1). A Request sent in fragments is decided at its first message:
//     if sent back, its fragments are swallowed and the forward is sent
//     once the last has arrived.
//   - Oneway requests are measured as unbound calls and always passed on:
//     there is no Reply to carry a forward. LocateRequests, CancelRequests
//     and everything else pass through; a CancelRequest ends the measurement
//     of the call it cancels.
//
// Bad input from a client (bad magic, an unknown version, a message above
// Options.Limits, a malformed header, fragment misuse) is answered with
// MessageError and that client's connection is closed; other connections go
// on. When the target connection fails or the target closes it, the
// client's connection is closed too, and the client's ORB reports
// COMM_FAILURE for calls in flight and reconnects (or rebinds) for later
// ones.
//
// Usage:
//
//	target, err := ior.Parse(os.Args[1]) // the server's IOR or corbaloc
//	ref := giopagent.Reference(target, "", "10.0.0.7", 4100) // what clients reach the agent by
//	mon, err := monitor.New(monitor.Options{Admin: admin, Group: "prime", Address: ref.String()})
//	a, err := giopagent.New(giopagent.Options{Target: target, Monitor: mon})
//	ln, err := net.Listen("tcp", ":4100")
//	go a.Serve(ln)
//	mon.Start() // registers ref, reports, applies advisories
//	...
//	mon.Close(ctx)  // deregister first: no new bindings
//	a.Shutdown(ctx) // then close connections as their calls finish
package giopagent
