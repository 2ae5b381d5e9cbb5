package bridge

import (
	"crypto/tls"
	"net"
)

// SetTLS makes the bridge terminate TLS with conf on the connections it
// accepts from now on (nil: plain). Connections already open keep what
// they have. conf must offer ALPN (httpdoor.ALPN) for h2.
func (s *Server) SetTLS(conf *tls.Config) { s.tlsConf.Store(conf) }

// TLS reports whether the bridge terminates TLS on new connections.
func (s *Server) TLS() bool { return s.tlsConf.Load() != nil }

// tlsListener wraps each accepted connection in TLS when the bridge
// terminates it; net/http then runs the handshake on the connection's own
// goroutine, bounded by the server's read and write timeouts, and serves
// h2 when ALPN chose it.
type tlsListener struct {
	net.Listener
	s *Server
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if conf := l.s.tlsConf.Load(); conf != nil {
		return tls.Server(c, conf), nil
	}
	return c, nil
}
