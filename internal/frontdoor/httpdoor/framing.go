package httpdoor

import (
	"context"
	"io"
	"net"
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// Every connection net/http serves — handed over by the lean engine, or
// any under EngineStdlib — is a lean.Guard: it follows the request stream
// as net/http reads it and tells the handler, request by request, what
// RFC 9112 asks of its framing where net/http differs (guarded by give).

// guardKey is the context key of a connection's guard.
type guardKey struct{}

// withGuard is http.Server.ConnContext: it keeps the connection's guard
// in the context of its requests.
func withGuard(ctx context.Context, c net.Conn) context.Context {
	if g, ok := c.(*lean.Guard); ok {
		return context.WithValue(ctx, guardKey{}, g)
	}
	return ctx
}

// judgeFraming applies RFC 9112's framing rules to an HTTP/1 request r,
// from what its connection's guard read of it: a request with
// Content-Length and Transfer-Encoding is served, then the connection
// closed (§6.3: net/http frames it by the latter, drops the former, but
// would keep the connection); an HTTP/1.0 request with Transfer-Encoding
// is answered 400 and the connection closed (§6.1: net/http would frame
// it by Content-Length); an Upgrade or CONNECT request's answer closes the
// connection unless it switches protocols (the guard stopped following the
// stream at it); and when the guard lost track of the stream, the answer
// closes the connection (every final answer: a 101 leaves the connection
// to the upgrade). It returns the writer to answer with, or done when it
// answered itself.
func (s *Server) judgeFraming(w http.ResponseWriter, r *http.Request) (_ http.ResponseWriter, done bool) {
	g, ok := r.Context().Value(guardKey{}).(*lean.Guard)
	if !ok || r.ProtoMajor != 1 {
		return w, false
	}
	f, known := g.Next()
	switch {
	case f.TE10:
		w.Header().Set("Connection", "close")
		s.writeError(w, r, s.g.Snapshot(), lean.ErrTE10)
		return w, true
	case !known || f.Conflict || f.Passthrough:
		return &closeUnlessSwitched{ResponseWriter: w}, false
	}
	return w, false
}

// closeUnlessSwitched closes the connection after a final answer: one
// that does not switch protocols (101 is written on the hijacked
// connection, not through WriteHeader). It unwraps for
// http.ResponseController, so flushing, deadlines and hijacking reach the
// server's writer.
type closeUnlessSwitched struct {
	http.ResponseWriter
	final bool
}

func (c *closeUnlessSwitched) WriteHeader(code int) {
	if !c.final && code >= http.StatusOK {
		c.final = true
		c.Header().Set("Connection", "close")
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *closeUnlessSwitched) Write(p []byte) (int, error) {
	if !c.final {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}

// Flush implements http.Flusher for code that asserts it.
func (c *closeUnlessSwitched) Flush() {
	if !c.final {
		c.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap returns the server's writer (http.ResponseController).
func (c *closeUnlessSwitched) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// serveOptionsAsterisk answers OPTIONS * as net/http's server does when
// left to answer it itself (its globalOptionsHandler, which the front
// door's server disables so that the request's framing is judged): 200
// with no body, reading up to 4 KiB of the request's body (a larger one
// closes the connection).
func serveOptionsAsterisk(w http.ResponseWriter, r *http.Request) {
	const maxBody = 4 << 10
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		if n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, maxBody+1)); n > maxBody {
			w.Header().Set("Connection", "close")
		}
	}
}
