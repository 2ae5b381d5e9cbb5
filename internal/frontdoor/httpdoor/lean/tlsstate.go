package lean

import "crypto/tls"

// TLSConnectionState is the connection's TLS state when it is a *tls.Conn
// (its handshake done): net/http, which sees the Guard, cannot set
// Request.TLS itself.
func (g *Guard) TLSConnectionState() (tls.ConnectionState, bool) {
	if tc, ok := g.Conn.(*tls.Conn); ok {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}
