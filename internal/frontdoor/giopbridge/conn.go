package giopbridge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopconn"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// maxPendingFragmented bounds the GIOP 1.2 messages one connection may
// have in fragments at once.
const maxPendingFragmented = 16

// SessionPrefix starts the session of a client connection without
// FT_REQUEST: the prefix and 32 random hex digits.
const SessionPrefix = "giop-conn-"

// clientConn is one client connection. Its read loop (serve) runs on one
// goroutine; each request is ordered on a goroutine of its own and its
// reply written through the embedded Conn.
type clientConn struct {
	*giopconn.Conn
	s  *Server
	nc net.Conn
	f  *wire.Framer
	j  *wire.Joiner
	// slots bound the calls being ordered (Options.MaxInflight).
	slots chan struct{}
	// session is the connection's session for requests without
	// FT_REQUEST, seq their last sequence number.
	session string
	seq     atomic.Uint64
}

func newClientConn(s *Server, nc net.Conn) *clientConn {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	c := &clientConn{s: s, nc: nc, slots: make(chan struct{}, s.opts.MaxInflight),
		session: SessionPrefix + hex.EncodeToString(id[:]),
		Conn:    giopconn.New(nc, giopconn.Options{Closing: s.conns.Closing, Logger: s.log, Linger: true})}
	c.f = wire.NewFramer(nc, wire.FramerOptions{Limits: giop.Limits{MaxMessageSize: s.opts.MaxMessageSize}, Budget: s.budget, Cancel: c.Gone()})
	c.j = wire.NewJoiner(wire.JoinerOptions{MaxOpen: maxPendingFragmented, V11: true, Budget: s.budget})
	return c
}

// serve reads and answers messages until the connection ends.
func (c *clientConn) serve() {
	defer c.Abort()
	defer c.j.Close()
	lim := giop.Limits{MaxMessageSize: c.s.opts.MaxMessageSize}
	for {
		if err := c.f.Wait(c.s.opts.IdleTimeout); err != nil {
			if errors.Is(err, wire.ErrIdle) {
				if c.CloseIfIdle() {
					return
				}
				continue // calls in flight: the client waits for them
			}
			return
		}
		h, raw, err := c.f.Read(nil, time.Now().Add(c.s.opts.RequestTimeout))
		if err != nil {
			if wire.IsProtocolError(err) {
				c.Fail(h.Version, h.Order, err)
			}
			return
		}
		whole, misaligned, err := c.j.Add(h, raw, c.s.opts.MaxMessageSize)
		if err != nil {
			c.Fail(h.Version, h.Order, err)
			return
		}
		c.Saw(h)
		if whole == nil {
			continue // more fragments to come
		}
		m, err := lim.DecodeMessage(whole)
		if err != nil {
			c.Fail(h.Version, h.Order, err)
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
		case <-c.Gone():
			return false
		}
		if !c.Enter() {
			<-c.slots
			return false
		}
		c.s.calls.Add(1)
		go func() {
			defer c.s.calls.Done()
			defer func() {
				<-c.slots
				c.Leave()
			}()
			c.call(m, misaligned)
		}()
		return true
	case *giop.LocateRequest:
		rep := giop.LocateReplyTo(m, giop.LocateObjectHere)
		if !c.s.ownKey(m.Target) {
			rep.Status = giop.LocateUnknownObject
		}
		return c.Send(rep, c.s.opts.RequestTimeout) == nil
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
		c.Fail(env.Version, env.Order,
			errors.New("giopbridge: a client sent a "+m.Type().String()+"; the bridge sends no requests"))
		return false
	}
}
