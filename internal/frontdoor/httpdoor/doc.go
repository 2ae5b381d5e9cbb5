// Package httpdoor is the HTTP front door of one group: the group's public
// address, speaking the HTTP binding protocol of DESIGN.md.
//
// Every request is served from the group's current snapshot
// (frontdoor.Group.Snapshot), read once per request, so a change of binding
// mode, strategy or membership takes effect on the next request and never
// fails a call in flight.
//
//   - on-demand and per-session: the front door picks a replica and answers
//     307 Temporary Redirect with Location set to the replica's base URL plus
//     the original path and query, and the headers Fulcrum-Group and
//     Fulcrum-Replica. It then tells the balancer (Group.Bound). A client
//     with a planned move goes to its move's replica; one coming back with
//     Fulcrum-Rebind that the snapshot has no move for is looked up
//     (Snapshot.LookupMove, cluster mode; at most 100 ms, then the picker
//     chooses), never an ordinary call.
//   - per-request: the front door is a reverse proxy (HTTP/1.1 keep-alive,
//     HTTP/2 and h2c inbound, gRPC pass-through over h2c upstream, streamed
//     bodies, trailers, Upgrade/WebSocket). After each attempt the attempt
//     policy (frontdoor.Decide) says whether the call goes again: a call
//     that provably never reached its replica (the dial failed) is retried
//     on another one; a call that may have run is replayed only under the
//     group's retry: idempotent, for GET, HEAD and OPTIONS that received
//     no response byte. Forwarded requests carry a Via entry naming this
//     balancer; one that already does is answered 508 Loop Detected.
//
// The common case — plain HTTP/1.1 requests of a per-request group to
// http:// members — is served by the lean engine (package lean): one
// goroutine per connection reads each request head with a small strict
// parser, sends the call on a pooled connection to the member and copies
// the answer back, allocating nothing per call. Everything else — HTTP/2
// (h2c), upgrades, Expect, CONNECT, HTTP/1.0, heads larger than 8 KiB, the
// redirect bindings — is handed, with the bytes already read, to a net/http
// server running ServeHTTP, for the rest of the connection. With
// Options.Engine set to EngineStdlib (config http_engine: stdlib) net/http
// serves every connection. Both engines proxy alike: picking, limits,
// retries, timeouts, errors, counters and access log, and frame requests
// alike (below); they differ in how a malformed request is answered (the
// front door's JSON error against net/http's plain text).
//
// With Options.TLS (or SetTLS) the front door terminates TLS (tls.go):
// each handshake runs on its connection's goroutine, bounded by the request
// timeout, offering ALPN h2 and http/1.1. A connection that negotiates h2
// goes to net/http as the *tls.Conn itself; an http/1.1 one runs on the
// lean engine over crypto/tls and keeps its TLS state when handed over
// (Request.TLS is set). Replicas are told X-Forwarded-Proto: https.
//
// Proxied calls go upstream over HTTP/1.1, except HTTP/2 calls that need
// HTTP/2 end to end — gRPC (Content-Type application/grpc*) or any call
// sent with "TE: trailers" — which go over HTTP/2: h2c with prior
// knowledge to http:// replicas, h2 over TLS to https:// ones. Plain HTTP/2
// clients thus reach replicas that only speak HTTP/1.1. TLS connections to
// https:// replicas are verified with the client Options.ReplicaTLS gives
// at each dial (the group's replica_tls), and always go through
// http.Transport: the lean engine serves only snapshots whose members are
// all http://, and its member client takes only http:// calls.
//
// Each member takes at most Snapshot.MaxInflight proxied calls at once
// (counted in its strategy.Live.Inflight); when the picked member is full
// the front door picks again, then takes any eligible member with room, and
// answers 503 "overloaded" only when every one is full.
//
// Timeouts come from Snapshot.Timeouts: Connect bounds each dial to a
// replica; Request bounds reading a request's headers, and a whole proxied
// call — but an upgrade only until its 101, an event stream only until its
// headers, and gRPC calls not at all (they carry their own deadlines);
// Idle bounds idle keep-alive connections. The header
// and idle timeouts are read when the Server is made; the others per
// request. A request head (request line and header fields) larger than
// MaxHeaderBytes is answered 431.
//
// Framing follows RFC 9112: empty lines before a request line are
// ignored; a request with Content-Length and Transfer-Encoding is framed
// by the latter, sent on without the former, and its answer closes the
// connection; an HTTP/1.0 request with Transfer-Encoding, and a target in
// authority form (host:port) other than CONNECT's, are answered 400. The
// rules for Content-Length and Transfer-Encoding hold for every request on
// both engines: the lean engine judges the requests it reads itself; every connection net/http serves (handed over, or any under
// EngineStdlib) is a lean.Guard, which follows the request stream as
// net/http reads it and tells ServeHTTP the framing of each request
// (net/http alone would read an HTTP/1.0 request by its Content-Length and
// keep the connection open after a Content-Length with chunking). The
// guard stops following a connection at an Upgrade or CONNECT request:
// unless that request switches protocols (101), its answer closes the
// connection. Where the guard cannot follow the stream as net/http reads
// it (input outside its strict reading, such as a chunk-size line ended by
// a bare LF), every later answer on the connection closes it.
//
// The front door counts Counters.Redirected and Counters.Proxied itself;
// Group.Bound is told of every binding (and counts Bindings and Rebinds),
// Group.Observe of every attempt of a proxied call with its latency to the
// response headers and whether it failed (connection error, the replica's
// timeout or 5xx). A call abandoned by its client, or whose client did not
// send its request in time, is not observed.
//
// When nothing can serve, the answer is 503 at once, with a JSON body:
//
//	{"error":{"code":"no_replica","message":"...","group":"prime","reason":"..."}}
//
// Usage:
//
//	fd := httpdoor.New(group, httpdoor.Options{Logger: log, AccessLog: os.Stdout})
//	go fd.Serve(ln)          // returns http.ErrServerClosed after Shutdown
//	...
//	err := fd.Shutdown(ctx)  // stop accepting, finish calls in flight
package httpdoor
