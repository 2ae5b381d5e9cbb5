// Package tcpdoor is the front door of tcp groups (docs/tcp.md): an L4
// proxy that balances each accepted connection. Per connection it
//
//   - reads a PROXY header (v1 or v2) when the peer is in
//     tcp.proxy_protocol.trusted, and takes the client's address from it;
//     a trusted peer's connection without a valid header is closed and
//     counted (conntable.RefuseProxyHeader). A connection from any other
//     peer is not inspected: a PROXY header it sends is passed to the
//     replica as data, so that clients cannot spoof the address that
//     hashing and affinity use;
//   - asks the group's session table (Snapshot.Affinity) where the client
//     must go, else acquires a replica with the group's strategy
//     (Request.Client and, for consistent-hash, Request.Key are the
//     client's IP, so planned moves and hashing apply per client address);
//     max_inflight caps the connections open to one replica. A connection
//     from a client address with a planned move (Snapshot.Planned) goes
//     to the replica the move names, and Group.Bound is told once it has
//     connected, so that the analyzer completes the move;
//   - connects within timeouts.connect, trying the next replica when the
//     connect fails (nothing was sent; frontdoor.Decide);
//   - sends a PROXY header to the replica when tcp.proxy_protocol.send
//     says so, records the connection in the group's connection table, and
//     copies both ways (pipe.go: on Linux small chunks with one read and
//     one write through a pooled buffer, bulk with splice, waiting for
//     bytes before either so that an idle connection holds no buffer and
//     no pipe;
//     half-close with CloseWrite; timeouts.idle; tcp.max_connection_age at
//     an idle moment);
//   - reports the connection to passive health when it ends: a replica
//     that took bytes and answered none before the idle timeout (or reset
//     the connection) failed.
//
// Connections beyond tcp.max_connections (0: derived from RLIMIT_NOFILE)
// are closed as they are accepted, without a goroutine each.
//
// Usage, as the balancer does:
//
//	s := tcpdoor.New(group, tcpdoor.Options{Logger: log})
//	go s.Serve(ln) // ErrServerClosed after Shutdown or Close
//	...
//	s.Shutdown(ctx) // open connections finish, or are closed when ctx ends
package tcpdoor
