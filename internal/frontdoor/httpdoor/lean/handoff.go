package lean

import (
	"bufio"
	"net"
	"sync/atomic"
)

// replayConn is a client connection handed over to net/http: reads first
// return what the lean path had buffered, then read from the connection.
// net/http never reads a connection from two goroutines at once.
type replayConn struct {
	net.Conn
	br *bufio.Reader // nil once drained
	// closeAfterFirst: the first request has Content-Length and
	// Transfer-Encoding; its answer closes the connection (ServeHTTP).
	closeAfterFirst atomic.Bool
}

// CloseAfterFirst reports, once, whether the answer to the connection's
// first request must close it: that request had Content-Length and
// Transfer-Encoding (RFC 9112 §6.1; net/http frames it by the latter and
// drops the former, but would keep the connection open).
func (c *replayConn) CloseAfterFirst() bool { return c.closeAfterFirst.Swap(false) }

func (c *replayConn) Read(p []byte) (int, error) {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return c.br.Read(p)
		}
		c.br = nil
	}
	return c.Conn.Read(p)
}

// CloseWrite half-closes the connection when it can (net/http uses it to
// deliver an error answer before closing).
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
