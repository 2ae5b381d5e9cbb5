package giopbridge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// closeWriteTimeout bounds writing a connection's last message
// (CloseConnection, MessageError).
const closeWriteTimeout = time.Second

// maxPendingFragmented bounds the GIOP 1.2 messages one connection may
// have in fragments at once.
const maxPendingFragmented = 16

// SessionPrefix starts the session of a client connection without
// FT_REQUEST: the prefix and 32 random hex digits.
const SessionPrefix = "giop-conn-"

// clientConn is one client connection. Its read loop (serve) runs on one
// goroutine; each request is ordered on a goroutine of its own and its
// reply written under wmu.
type clientConn struct {
	s  *Server
	nc net.Conn
	f  *wire.Framer
	j  *wire.Joiner
	// gone is closed when nc is: it ends waits for buffer memory and for
	// a call slot.
	gone     chan struct{}
	goneOnce sync.Once
	// slots bound the calls being ordered (Options.MaxInflight).
	slots chan struct{}
	// session is the connection's session for requests without
	// FT_REQUEST, seq their last sequence number.
	session string
	seq     atomic.Uint64

	wmu sync.Mutex

	// mu guards what follows.
	mu sync.Mutex
	// busy counts the calls in flight.
	busy   int
	closed bool
	// version and order of the client's last message, for
	// CloseConnection.
	version giop.Version
	order   cdr.ByteOrder
}

func newClientConn(s *Server, nc net.Conn) *clientConn {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	c := &clientConn{s: s, nc: nc, gone: make(chan struct{}), slots: make(chan struct{}, s.opts.MaxInflight),
		session: SessionPrefix + hex.EncodeToString(id[:]), version: giop.V10}
	c.f = wire.NewFramer(nc, wire.FramerOptions{Limits: giop.Limits{MaxMessageSize: s.opts.MaxMessageSize}, Budget: s.budget, Cancel: c.gone})
	c.j = wire.NewJoiner(wire.JoinerOptions{MaxOpen: maxPendingFragmented, V11: true, Budget: s.budget})
	return c
}

// serve reads and answers messages until the connection ends.
func (c *clientConn) serve() {
	defer c.abort()
	defer c.j.Close()
	lim := giop.Limits{MaxMessageSize: c.s.opts.MaxMessageSize}
	for {
		if err := c.f.Wait(c.s.opts.IdleTimeout); err != nil {
			if errors.Is(err, wire.ErrIdle) {
				if c.closeIfIdle() {
					return
				}
				continue // calls in flight: the client waits for them
			}
			return
		}
		h, raw, err := c.f.Read(nil, time.Now().Add(c.s.opts.RequestTimeout))
		if err != nil {
			if wire.IsProtocolError(err) {
				c.fail(h, err)
			}
			return
		}
		whole, misaligned, err := c.j.Add(h, raw, c.s.opts.MaxMessageSize)
		if err != nil {
			c.fail(h, err)
			return
		}
		c.mu.Lock()
		c.version, c.order = h.Version, h.Order
		c.mu.Unlock()
		if whole == nil {
			continue // more fragments to come
		}
		m, err := lim.DecodeMessage(whole)
		if err != nil {
			c.fail(h, err)
			return
		}
		if cr, ok := m.(*giop.CancelRequest); ok {
			c.j.Cancel(cr.RequestID) // its fragments, if any, come no more
		}
		if !c.handle(m, misaligned) {
			return
		}
	}
}

// handle acts on one whole message; false when the connection must end.
func (c *clientConn) handle(m giop.Message, misaligned bool) bool {
	switch m := m.(type) {
	case *giop.Request:
		select {
		case c.slots <- struct{}{}:
		case <-c.gone:
			return false
		}
		if !c.enter() {
			<-c.slots
			return false
		}
		c.s.calls.Add(1)
		go func() {
			defer c.s.calls.Done()
			defer func() {
				<-c.slots
				c.leave()
			}()
			c.call(m, misaligned)
		}()
		return true
	case *giop.LocateRequest:
		rep := giop.LocateReplyTo(m, giop.LocateObjectHere)
		if !c.s.ownKey(m.Target) {
			rep.Status = giop.LocateUnknownObject
		}
		return c.send(rep) == nil
	case *giop.CancelRequest:
		// The call is in the log and will run; its reply is sent anyway,
		// which the spec allows (the client drops it).
		return true
	case *giop.CloseConnection:
		return false
	case *giop.MessageError:
		c.s.log.Debug("GIOP client sent MessageError", "remote", c.nc.RemoteAddr().String())
		return false
	default:
		env := giop.EnvelopeOf(m)
		c.fail(giop.Header{Version: env.Version, Order: env.Order},
			errors.New("giopbridge: a client sent a "+m.Type().String()+"; the bridge sends no requests"))
		return false
	}
}

// enter counts a call in flight; false when the connection is closing.
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
	b, err := giop.EncodeMessage(&giop.CloseConnection{Envelope: giop.Envelope{Version: v, Order: o}})
	if err == nil {
		c.writeLast(b)
	}
	c.closeNC()
	return true
}

// fail answers a protocol error with MessageError, in h's version (the
// highest when it is not supported) and order, and closes.
func (c *clientConn) fail(h giop.Header, err error) {
	c.s.log.Debug("GIOP protocol error from client", "remote", c.nc.RemoteAddr().String(), "err", err)
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	v := h.Version
	if !v.Supported() {
		v = giop.Highest
	}
	b, encErr := giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: v, Order: h.Order}})
	if encErr != nil {
		b, _ = giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: giop.Highest}})
	}
	c.writeLast(b)
	c.linger()
	c.closeNC()
}

// Bounds of linger.
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 64 << 10
)

// linger ends the sending side after a MessageError and reads what the
// client still sends (at most lingerBytes for lingerTime), so that closing
// with unread input does not reset the connection before the client has
// read the MessageError. Closing the connection (Close) ends it at once.
func (c *clientConn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok {
		return
	}
	_ = cw.CloseWrite()
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, lingerBytes))
}

// abort closes the connection at once.
func (c *clientConn) abort() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.closeNC()
}

// writeLast writes a connection's last message, bounded by
// closeWriteTimeout.
func (c *clientConn) writeLast(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	_, _ = c.nc.Write(b)
}

// send writes one message within the request timeout; a failed write
// closes the connection.
func (c *clientConn) send(m giop.Message) error {
	b, err := giop.EncodeMessage(m)
	if err != nil {
		return err
	}
	return c.sendBytes(b)
}

func (c *clientConn) sendBytes(b []byte) error {
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.RequestTimeout))
	_, err := c.nc.Write(b)
	c.wmu.Unlock()
	if err != nil {
		c.closeNC()
	}
	return err
}

// closeNC closes the connection, ending waits for memory and slots.
func (c *clientConn) closeNC() {
	c.goneOnce.Do(func() { close(c.gone) })
	_ = c.nc.Close()
}
