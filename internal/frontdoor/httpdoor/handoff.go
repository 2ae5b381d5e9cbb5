package httpdoor

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
)

// handoff is the listener of the front door's net/http server: it accepts
// the connections the lean path hands over, each with the bytes the lean
// path already read. Safe for concurrent use.
type handoff struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoff() *handoff {
	return &handoff{addr: handoffAddr{}, conns: make(chan net.Conn), done: make(chan struct{})}
}

// give hands c to net/http; false when the listener is closed (the caller
// still owns c).
func (l *handoff) give(c net.Conn) bool {
	select {
	case <-l.done:
		return false
	default:
	}
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept implements net.Listener.
func (l *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; connections given later are refused.
func (l *handoff) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *handoff) Addr() net.Addr { return l.addr }

type handoffAddr struct{}

func (handoffAddr) Network() string { return "handoff" }
func (handoffAddr) String() string  { return "httpdoor-handoff" }

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
