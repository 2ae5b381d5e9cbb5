package giopdoor

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// closeWriteTimeout bounds writing the last message (CloseConnection,
// MessageError) to a connection being closed.
const closeWriteTimeout = time.Second

// clientConn is one client connection to the front door. Its read loop
// (serve) runs on one goroutine; answers are written by it and, in
// per-request mode, by the upstream connections' readers, serialised by
// wmu.
type clientConn struct {
	s  *Server
	nc net.Conn
	// r is used by serve only.
	r *msgReader
	// gone is closed when nc is: a wait for buffer memory ends.
	gone     chan struct{}
	goneOnce sync.Once
	// clientHost is the host part of the peer's address (client-address
	// keyed strategies).
	clientHost string

	wmu sync.Mutex

	// mu guards what follows.
	mu sync.Mutex
	// busy counts messages being answered and proxied calls in flight.
	busy   int
	closed bool
	// version and order of the last message, for CloseConnection.
	version giop.Version
	order   cdr.ByteOrder
	// calls are the proxied calls awaiting a reply, by client request id.
	calls map[uint32]*call
}

func newClientConn(s *Server, nc net.Conn) *clientConn {
	c := &clientConn{s: s, nc: nc, gone: make(chan struct{}), version: giop.V10}
	c.r = newMsgReader(nc, s.budget, c.gone)
	if host, _, err := net.SplitHostPort(nc.RemoteAddr().String()); err == nil {
		c.clientHost = host
	}
	return c
}

// serve reads and answers messages until the connection ends.
func (c *clientConn) serve() {
	defer c.abort()
	defer c.r.close()
	for {
		snap := c.s.g.Snapshot()
		to := frontdoor.TimeoutsOf(snap.Timeouts)
		c.s.budget.SetMax(maxBufferedBytes(snap))
		m, raw, misaligned, hdr, err := c.r.next(to.Idle, to.Request, maxMessageSize(snap))
		if err != nil {
			if errors.Is(err, wire.ErrIdle) {
				if c.closeIfIdle() {
					return
				}
				continue // calls in flight: the client waits for them
			}
			var pe *protocolError
			if errors.As(err, &pe) {
				c.fail(pe)
			}
			return
		}
		c.mu.Lock()
		c.version, c.order = hdr.Version, hdr.Order
		c.mu.Unlock()
		if m == nil {
			continue // more fragments to come
		}
		// The message is served from the snapshot current when it
		// arrived, not the one its wait began with.
		snap = c.s.g.Snapshot()
		if !c.handle(snap, m, raw, misaligned) {
			return
		}
	}
}

// handle acts on one whole message. It returns false when the connection
// must end.
func (c *clientConn) handle(snap *frontdoor.Snapshot, m giop.Message, raw []byte, misaligned bool) bool {
	switch m := m.(type) {
	case *giop.Request:
		if !c.enter() {
			return false
		}
		if snap.Binding == protocol.PerRequest || !m.ResponseExpected() {
			// Per-request, and oneway calls in any mode (they cannot be
			// forwarded: no reply comes back to carry the forward).
			return c.proxyRequest(snap, m, misaligned)
		}
		defer c.leave()
		return c.redirectRequest(snap, m)
	case *giop.LocateRequest:
		if !c.enter() {
			return false
		}
		defer c.leave()
		return c.answerLocate(snap, m)
	case *giop.CancelRequest:
		c.cancelCall(m)
		return true
	case *giop.CloseConnection:
		// A GIOP 1.2 peer may close its side; nothing is pending for it.
		return false
	case *giop.MessageError:
		c.s.log.Debug("client sent MessageError", "remote", c.nc.RemoteAddr().String())
		return false
	default:
		// Replies and LocateReplies from a client: the front door sends
		// no requests (no bidirectional GIOP).
		env := giop.EnvelopeOf(m)
		c.fail(&protocolError{version: env.Version, order: env.Order,
			err: errors.New("giopdoor: a client sent a " + m.Type().String() + "; the front door sends no requests")})
		return false
	}
}

// enter counts a message or call in flight; false when the connection is
// closing.
func (c *clientConn) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.busy++
	return true
}

// leave uncounts one; the last one out of a shutting-down server closes the
// connection.
func (c *clientConn) leave() {
	c.mu.Lock()
	c.busy--
	last := c.busy == 0 && c.s.conns.Closing()
	c.mu.Unlock()
	if last {
		c.closeIfIdle()
	}
}

// closeIfIdle closes the connection, with a CloseConnection first, when
// nothing is in flight on it. It reports whether it closed.
func (c *clientConn) closeIfIdle() bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return true
	}
	if c.busy > 0 {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	v, o := c.version, c.order
	c.mu.Unlock()
	c.writeLast(closeConnection(v, o))
	c.closeNC()
	return true
}

// fail answers a protocol error with MessageError and closes.
func (c *clientConn) fail(pe *protocolError) {
	c.s.log.Debug("GIOP protocol error from client", "remote", c.nc.RemoteAddr().String(), "err", pe.err)
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.writeLast(messageError(pe))
	c.closeNC()
}

// abort closes the connection at once and drops its calls in flight.
func (c *clientConn) abort() {
	c.mu.Lock()
	c.closed = true
	calls := c.calls
	c.calls = nil
	c.mu.Unlock()
	c.closeNC()
	for _, cl := range calls {
		cl.abandon()
	}
}

// writeLast writes a connection's last message, bounded by
// closeWriteTimeout.
func (c *clientConn) writeLast(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	_, _ = c.nc.Write(b)
}

// send writes one message to the client within timeout. A failed write
// closes the connection.
func (c *clientConn) send(m giop.Message, timeout time.Duration) error {
	b, err := encode(m)
	if err != nil {
		return err
	}
	return c.sendBytes(b, timeout)
}

func (c *clientConn) sendBytes(b []byte, timeout time.Duration) error {
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(b)
	c.wmu.Unlock()
	if err != nil {
		c.closeNC()
	}
	return err
}

// closeNC closes the connection, ending a wait of serve for buffer memory.
func (c *clientConn) closeNC() {
	c.goneOnce.Do(func() { close(c.gone) })
	_ = c.nc.Close()
}
