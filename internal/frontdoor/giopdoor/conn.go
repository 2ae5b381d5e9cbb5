package giopdoor

import (
	"errors"
	"net"
	"sync"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopconn"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// clientConn is one client connection to the front door. Its read loop
// (serve) runs on one goroutine; answers are written through the embedded
// Conn by it and, in per-request mode, by the upstream connections'
// readers.
type clientConn struct {
	*giopconn.Conn
	s  *Server
	nc net.Conn
	// r is used by serve only.
	r *msgReader
	// clientHost is the host part of the peer's address (client-address
	// keyed strategies).
	clientHost string

	// mu guards calls: the proxied calls awaiting a reply, by client
	// request id.
	mu    sync.Mutex
	calls map[uint32]*call
}

func newClientConn(s *Server, nc net.Conn) *clientConn {
	c := &clientConn{s: s, nc: nc, Conn: giopconn.New(nc, giopconn.Options{Closing: s.conns.Closing, Logger: s.log})}
	c.r = newMsgReader(nc, s.budget, c.Gone())
	if host, _, err := net.SplitHostPort(nc.RemoteAddr().String()); err == nil {
		c.clientHost = host
	}
	return c
}

// serve reads and answers messages until the connection ends.
func (c *clientConn) serve() {
	defer c.Abort()
	defer c.r.close()
	for {
		snap := c.s.g.Snapshot()
		to := frontdoor.TimeoutsOf(snap.Timeouts)
		c.s.budget.SetMax(maxBufferedBytes(snap))
		m, raw, misaligned, hdr, err := c.r.next(to.Idle, to.Request, maxMessageSize(snap))
		if err != nil {
			if errors.Is(err, wire.ErrIdle) {
				if c.CloseIfIdle() {
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
		c.Saw(hdr)
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
		if !c.Enter() {
			return false
		}
		if snap.Binding == protocol.PerRequest || !m.ResponseExpected() {
			// Per-request, and oneway calls in any mode (they cannot be
			// forwarded: no reply comes back to carry the forward).
			return c.proxyRequest(snap, m, misaligned)
		}
		defer c.Leave()
		return c.redirectRequest(snap, m)
	case *giop.LocateRequest:
		if !c.Enter() {
			return false
		}
		defer c.Leave()
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

// fail answers a protocol error with MessageError and closes.
func (c *clientConn) fail(pe *protocolError) { c.Fail(pe.version, pe.order, pe.err) }

// Abort closes the connection at once and drops its calls in flight.
func (c *clientConn) Abort() {
	c.Conn.Abort()
	c.mu.Lock()
	calls := c.calls
	c.calls = nil
	c.mu.Unlock()
	for _, cl := range calls {
		cl.abandon()
	}
}
