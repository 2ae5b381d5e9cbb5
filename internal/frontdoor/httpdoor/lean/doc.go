// Package lean is the front door's lean HTTP/1 engine: it serves plain
// HTTP/1.1 requests of a per-request group, proxied to http:// members, on
// one goroutine per client connection that reads each request head with a
// small strict parser (parse.go), sends the call on a pooled connection to
// the member (memberclient.go) and copies the answer back (body.go:
// Content-Length, chunked or close-delimited bodies; keep-alive and
// pipelined requests in order), allocating nothing per call. Malformed
// requests are answered 400 with a JSON error that says what is wrong.
//
// Whatever it does not serve — HTTP/2, upgrades, Expect, CONNECT,
// HTTP/1.0, heads larger than ReadBuffer, the redirect bindings — it gives
// back, at the start of a request, with the bytes already read, for
// net/http to serve the rest of the connection. Its calls follow the
// front door's attempt policy (frontdoor.Decide) like the net/http path's.
//
// The connections it hands over are Guards (guard.go, framer.go), which
// NewGuard also makes of any connection net/http is to serve: a Guard
// follows the request stream as net/http reads it and gives, request by
// request, the framing facts RFC 9112 judges and net/http does not
// (Content-Length with Transfer-Encoding; Transfer-Encoding in HTTP/1.0),
// for the front door to answer as the engine answers its own requests.
//
// A client connection may be a *tls.Conn whose handshake is done: the
// engine then reads and writes through crypto/tls (its raw system calls
// apply to plain sockets only), tells members X-Forwarded-Proto: https,
// looks for the client's end on the socket beneath (POLLRDHUP on Linux:
// a TLS client sends close_notify before its FIN), and a connection it
// gives back reports its TLS state (Guard.TLSConnectionState).
//
// The engine shares nothing with the front door but what Config passes:
// the group, the member client, the renderer of error answers and the
// access log.
//
// Usage:
//
//	e := lean.New(lean.Config{Group: g, Members: mc, Answer: render})
//	go func() {
//		if rest := e.Serve(conn); rest != nil {
//			// hand rest to net/http
//		}
//	}()
//	...
//	err := e.Shutdown(ctx) // close idle connections, wait for the others
package lean
