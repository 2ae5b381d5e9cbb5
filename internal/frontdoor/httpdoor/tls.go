package httpdoor

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// ALPN is what a TLS front door offers, preferred first: its
// certificates' configuration must list it (Options.TLS.NextProtos).
var ALPN = []string{"h2", "http/1.1"}

// SetTLS makes the front door terminate TLS with conf on the connections
// it accepts from now on (nil: plain). Connections already open keep what
// they have. conf must offer ALPN; its certificates may change under it
// (GetConfigForClient, GetCertificate).
func (s *Server) SetTLS(conf *tls.Config) { s.tlsConf.Store(conf) }

// TLS reports whether the front door terminates TLS on new connections.
func (s *Server) TLS() bool { return s.tlsConf.Load() != nil }

// serveTLS runs the handshake of a client connection on its own goroutine,
// bounded by the request timeout, then serves it: a connection that
// negotiated h2 (or every one, with EngineStdlib) goes to net/http as the
// *tls.Conn itself, before anything is read; the others run on the lean
// engine over crypto/tls.
func (s *Server) serveTLS(nc net.Conn, conf *tls.Config) {
	if !s.trackHandshake(nc, true) {
		_ = nc.Close()
		return
	}
	tc := tls.Server(nc, conf)
	_ = nc.SetDeadline(time.Now().Add(s.to.Request))
	err := tc.HandshakeContext(s.base)
	s.trackHandshake(nc, false)
	if err != nil {
		s.log.Debug("TLS handshake failed", "client", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	_ = nc.SetDeadline(time.Time{})
	if s.lean == nil || tc.ConnectionState().NegotiatedProtocol == "h2" {
		if !s.handoff.give(tc) {
			_ = tc.Close()
		}
		return
	}
	s.serveConn(tc)
}

// trackHandshake adds nc to the connections in their handshake, or
// removes it; adding fails once shutting down.
func (s *Server) trackHandshake(nc net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.handshakes, nc)
		return true
	}
	if s.inShutdown.Load() {
		return false
	}
	if s.handshakes == nil {
		s.handshakes = map[net.Conn]struct{}{}
	}
	s.handshakes[nc] = struct{}{}
	return true
}

// closeHandshakesLocked closes the connections still in their handshake:
// nothing was asked on them yet. Caller must hold s.mu.
func (s *Server) closeHandshakesLocked() {
	for nc := range s.handshakes {
		_ = nc.Close()
	}
}

// isH2 reports whether c is a TLS connection that negotiated h2: net/http
// must see the *tls.Conn itself to serve it (and the framing guard, which
// follows HTTP/1, has nothing to judge on it).
func isH2(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// tlsStater is a connection net/http serves over TLS that is not the
// *tls.Conn itself (a lean.Guard).
type tlsStater interface {
	TLSConnectionState() (tls.ConnectionState, bool)
}

// tlsStateKey is the context key of a handed-over connection's TLS state.
type tlsStateKey struct{}

// withTLSState keeps, in the context of c's requests, the TLS state of a
// guarded TLS connection (net/http sets Request.TLS only for a *tls.Conn).
func withTLSState(ctx context.Context, c net.Conn) context.Context {
	if ts, ok := c.(tlsStater); ok {
		if st, ok := ts.TLSConnectionState(); ok {
			return context.WithValue(ctx, tlsStateKey{}, &st)
		}
	}
	return ctx
}

// withTLS returns r with TLS set from its connection's context when
// net/http could not set it.
func withTLS(r *http.Request) *http.Request {
	if r.TLS != nil {
		return r
	}
	if st, ok := r.Context().Value(tlsStateKey{}).(*tls.ConnectionState); ok {
		r = r.WithContext(r.Context())
		r.TLS = st
	}
	return r
}
