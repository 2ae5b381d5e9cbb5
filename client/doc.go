// Package client is fulcrum's smart HTTP client: an http.RoundTripper that
// follows the HTTP binding protocol (DESIGN.md "HTTP binding protocol") so
// that calls go straight from the client to a replica, not through the
// balancer.
//
// Send every call to the group's front door URL. The first one is answered
// by the front door with a 307 to the chosen replica; the Transport caches
// that binding (front door → replica base URL) and sends later calls
// straight to the replica, with Fulcrum-Binding: <group>/<replica-id> and a
// stable random Fulcrum-Client id. When the replica's monitor sends the
// client back (307 with Fulcrum-Rebind: 1), the Transport drops the binding
// and goes through the front door again, which binds it afresh. A failure
// to connect to the replica or a 503 from it also drops the binding.
//
// No call runs twice: a call is retried through the front door only when it
// provably did not run — the replica could not be connected to (nothing was
// sent), the replica answered with a rebind instead of running it, or the
// front door answered 503 — or when its group deduplicates it (a
// replicated group, below). Any other failure is returned to the caller. A
// request body follows redirects when the request has GetBody (as requests
// built by http.NewRequest from a bytes.Buffer, bytes.Reader or
// strings.Reader do) or when it fits in Options.MaxBufferedBody; a larger
// streamed body cannot be sent twice, and the redirect is returned instead.
//
// # Several front doors
//
// A group served by several balancer instances (a cluster) has a front door
// on each. List them in Options.FrontDoors: calls sent to any of them share
// one binding, and a call that must go through a front door moves to the
// next one only when it provably did not run there — a dial error, the
// front door's own 503 (fulcrum's JSON error with code no_replica or
// overloaded, naming the group in Fulcrum-Group), or, once a front door of
// the group has bound the client (so it redirects and runs no call), any
// transport error. A replica's 503 is never a reason to try another front
// door: it is returned to the caller as is, since the call ran. The rule
// above stands: no call runs twice. A DNS name with several addresses as
// the front door's host is dialled address by address by net/http when
// one refuses the connection, but a 503 is not retried on its other
// addresses; list them in Options.FrontDoors for that.
//
// # Replicated groups
//
// A replicated group's front door (binding replicated) is a bridge: it
// orders every call in the group's log, every replica runs it, and the
// bridge answers with the first reply and the call's log position in
// Fulcrum-Position. The log deduplicates a call by its Fulcrum-Session and
// Fulcrum-Sequence (or its Idempotency-Key), so such a call may be sent
// again: it still runs once, and the retry gets the original reply.
//
// Every call the Transport sends to a front door (not the bound calls
// straight to a replica) carries Fulcrum-Session, the Transport's
// Fulcrum-Client id, and a fresh Fulcrum-Sequence: a counter from a random
// start, unique within the session, in no particular order across
// concurrent calls; every try of one call carries the same pair. They are
// sent always, not only once the group is known to be replicated: the
// Transport cannot know it before the first answer, and a first call
// without them would be keyed by its connection at the bridge, so that the
// session's read-your-writes and a re-send of it would not hold. Other
// front doors ignore them (a per-request front door passes them on to the
// replica like any header). A caller's own Fulcrum-Session,
// Fulcrum-Sequence or Idempotency-Key is kept as set, and beside an
// Idempotency-Key nothing is added (the key names the call alone).
//
// Once a front door of the group has answered with Fulcrum-Position (or
// from the first call with Options.Replicated), a call to it that fails
// after it was sent — a connection reset or closed before the answer, an
// answer cut short — or that gets a 503 with Retry-After is sent again
// unchanged, same headers and body, to the next front door of
// Options.FrontDoors, each front door once per call; a lone front door (no
// Options.FrontDoors) gets a second try after a transport error (a
// kept-alive connection the bridge closed as the call went out), not after
// a 503. Then the last error or answer is returned. To see an answer cut short
// before returning it, the Transport reads a replicated group's answers
// whole, up to Options.MaxBufferedBody (the rest of a longer answer is
// streamed, and a cut in it reaches the caller). The body is replayed as
// for a redirect: a body without GetBody larger than MaxBufferedBody
// cannot be sent again, and the error is returned. The Transport forgets
// that a group is replicated when its front door answers with a binding
// redirect; a group switched from replicated to per-request is still
// treated as replicated by a Transport that learned it, so restart such
// clients (a re-sent call could run twice there).
//
// The Transport follows fulcrum's redirects itself, a bounded number of
// times (Options.MaxHops); the http.Client's own redirect policy only sees
// other redirects. Plain clients (curl -L) work with an on-demand or
// per-session front door too: they follow the redirect on every call and
// are never sent back, since they carry no binding.
//
// Bound calls with Options.Timeout rather than http.Client.Timeout: net/http
// enforces a Client's Timeout through any RoundTripper but its own with two
// goroutines, a timer and a cancel channel per call, which on loopback
// costs more than the binding does; Options.Timeout is a context deadline.
//
// gRPC clients do not follow HTTP redirects, so this package does not apply
// to them: put gRPC services in a group with binding per-request, where the
// front door forwards every call as a proxy.
//
// # Example
//
//	hc := client.NewHTTPClient(client.Options{Timeout: 10 * time.Second})
//	for n := range 100 {
//		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:8000/prime/%d", n))
//		if err != nil {
//			log.Fatal(err)
//		}
//		io.Copy(io.Discard, resp.Body)
//		resp.Body.Close()
//	}
package client
