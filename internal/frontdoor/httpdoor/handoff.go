package httpdoor

import (
	"net"
	"sync"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// handoff is the listener of the front door's net/http server: it accepts
// the connections the lean engine hands over, each with the bytes the
// engine already read, or with EngineStdlib every connection. Safe for
// concurrent use.
type handoff struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoff() *handoff {
	return &handoff{addr: handoffAddr{}, conns: make(chan net.Conn), done: make(chan struct{})}
}

// give hands c to net/http, guarded (a lean.Guard, as the lean engine
// hands connections over, or made one) unless it is a *tls.Conn that
// negotiated h2, which goes as it is (tls.go); false when the listener is
// closed (the caller still owns c).
func (l *handoff) give(c net.Conn) bool {
	select {
	case <-l.done:
		return false
	default:
	}
	if _, ok := c.(*lean.Guard); !ok && !isH2(c) {
		c = lean.NewGuard(c)
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
