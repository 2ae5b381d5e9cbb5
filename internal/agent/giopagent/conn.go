package giopagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

// closeWriteTimeout bounds writing CloseConnection to a client at shutdown.
const closeWriteTimeout = time.Second

// readBufferSize is the size of each connection side's read buffer.
const readBufferSize = 32 << 10

// errProtocol wraps what a peer sent that breaks GIOP: the agent answers it
// with MessageError and closes the connection.
var errProtocol = errors.New("giopagent: protocol error")

// fragmented is what the agent keeps about a message whose Fragment
// messages are still to come.
type fragmented struct {
	// shed, on the client side, is the Request being answered with
	// LOCATION_FORWARD once its last fragment is in; none of its fragments
	// go upstream.
	shed *giop.Request
	// call, on the target side, says the reply ends a measured call when
	// its last fragment has passed.
	call bool
}

// conn is one client connection and the connection to the target opened
// for it. The client loop (serve's goroutine) reads the client and is the
// only writer to the target; the target loop reads the target. Both write
// to the client under wmu.
type conn struct {
	a      *Agent
	client net.Conn
	id     string // the client id the monitor counts calls under
	cr     *wire.Framer

	// wmu serialises writes to the client. The target loop holds it across
	// a GIOP 1.1 reply sent in fragments, which must reach the client with
	// nothing in between.
	wmu sync.Mutex

	mu       sync.Mutex
	upstream net.Conn                // guarded by mu until set
	pending  map[uint32]monitor.Call // two-way calls passed on, by request id; guarded by mu
	version  giop.Version            // of the client's latest message; guarded by mu
	closing  bool                    // CloseConnection sent: pass nothing more on; guarded by mu
	closed   bool                    // guarded by mu
	// lingering: MessageError sent, the client's connection is being
	// drained before it is closed; guarded by mu.
	lingering bool

	in  wire.Tracker[fragmented] // client side; client loop only
	out wire.Tracker[fragmented] // target side; target loop only
}

func newConn(a *Agent, nc net.Conn) *conn {
	return &conn{
		a:       a,
		client:  nc,
		id:      nc.RemoteAddr().String(),
		pending: map[uint32]monitor.Call{},
	}
}

// serve runs the connection until either side closes or fails.
func (c *conn) serve() {
	up, err := c.a.dialTarget()
	if err != nil {
		c.a.log.Warn("closing a client connection: the target cannot be reached", "client", c.id, "err", err)
		c.close()
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		up.Close()
		return
	}
	c.upstream = up
	c.mu.Unlock()
	c.cr = wire.NewFramer(c.client, wire.FramerOptions{Limits: c.a.opts.Limits, BufferSize: readBufferSize})

	targetDone := make(chan struct{})
	go func() {
		defer close(targetDone)
		err := c.targetLoop(wire.NewFramer(up, wire.FramerOptions{Limits: c.a.opts.Limits, BufferSize: readBufferSize}))
		c.mu.Lock()
		lingering := c.lingering
		c.mu.Unlock()
		if lingering {
			return // the client loop closes the client's connection
		}
		if err != nil && !isClosedConn(err) {
			c.a.log.Warn("closing a client connection: the target connection failed", "client", c.id, "err", err)
		}
		c.close()
	}()
	err = c.clientLoop(up)
	var pe *protocolError
	switch {
	case errors.As(err, &pe):
		c.a.log.Info("closing a client connection after bad input (MessageError sent)", "client", c.id, "err", err)
		c.mu.Lock()
		c.lingering = true
		c.mu.Unlock()
		c.messageError(pe.version)
		up.Close()
		<-targetDone
		c.linger()
	case err != nil && !isClosedConn(err):
		c.a.log.Debug("client connection ended", "client", c.id, "err", err)
	}
	c.close()
	<-targetDone
	c.mu.Lock()
	for id, call := range c.pending {
		call.End()
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// protocolError is bad input from the client, answered with MessageError in
// version.
type protocolError struct {
	version giop.Version
	err     error
}

func (e *protocolError) Error() string { return e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

func (c *conn) badInput(h giop.Header, err error) error {
	v := h.Version
	if !v.Supported() {
		v = giop.Highest
	}
	return &protocolError{version: v, err: err}
}

// clientLoop passes the client's messages to the target, measuring two-way
// requests and answering those of a client sent back.
func (c *conn) clientLoop(up net.Conn) error {
	lim := c.a.opts.Limits
	var buf []byte
	for {
		h, msg, err := c.cr.Read(buf, time.Time{})
		buf = msg
		if err != nil {
			if wire.IsProtocolError(err) {
				return c.badInput(h, fmt.Errorf("%w: %w", errProtocol, err))
			}
			return err
		}
		c.mu.Lock()
		c.version = h.Version
		c.mu.Unlock()
		m, err := lim.DecodeMessage(msg)
		if err != nil {
			return c.badInput(h, err)
		}
		if v11 := c.in.V11(); v11 != nil && h.Type != giop.MsgFragment {
			if cr, ok := m.(*giop.CancelRequest); !ok || v11.ID != cr.RequestID {
				return c.badInput(h, fmt.Errorf("%w: a GIOP %v %v inside a fragmented GIOP 1.1 message", errProtocol, h.Version, h.Type))
			}
		}
		pass := true
		switch m := m.(type) {
		case *giop.Request:
			var fm *fragmented
			if h.MoreFragments {
				t, err := c.in.Open(h.Version, m.RequestID)
				if err != nil {
					return c.badInput(h, err)
				}
				fm = &t.Data
			}
			pass, err = c.request(m, fm)
			if err != nil {
				return err
			}
		case *giop.Fragment:
			t, last, err := c.in.Next(h, m.RequestID)
			if err != nil {
				return c.badInput(h, err)
			}
			if fm := t.Data; fm.shed != nil {
				pass = false
				if last {
					if err := c.sendBack(fm.shed); err != nil {
						return err
					}
				}
			}
		case *giop.CancelRequest:
			if t := c.in.Cancel(m.RequestID); t != nil && t.Data.shed != nil {
				pass = false // the target never saw it
			}
			c.mu.Lock()
			if call, ok := c.pending[m.RequestID]; ok {
				call.End() // the client no longer waits for it
				delete(c.pending, m.RequestID)
			}
			c.mu.Unlock()
		default:
			if h.MoreFragments {
				id, _ := wire.RequestID(m)
				if _, err := c.in.Open(h.Version, id); err != nil {
					return c.badInput(h, err)
				}
			}
		}
		if !pass {
			continue
		}
		if _, err := up.Write(msg); err != nil {
			return fmt.Errorf("giopagent: write to target: %w", err)
		}
	}
}

// request decides what happens to a Request (the first message of it if fm
// is not nil): passed on (true), answered with LOCATION_FORWARD now or after
// its last fragment, or dropped because the connection is closing (false).
func (c *conn) request(req *giop.Request, fm *fragmented) (pass bool, err error) {
	mon := c.a.opts.Monitor
	if !req.ResponseExpected() {
		// A oneway call has no reply to carry a forward: it is measured as
		// an unbound call and always passed on.
		if mon != nil {
			call, _ := mon.Begin(c.id, false)
			defer call.End()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.closing, nil
	}
	var call monitor.Call
	if mon != nil {
		var ok bool
		call, ok = mon.Begin(c.id, true)
		if !ok {
			_, err := c.a.groupRef()
			if err == nil {
				shed := &giop.Request{Envelope: giop.Envelope{Version: req.Version, Order: req.Order}, RequestID: req.RequestID}
				if fm != nil {
					fm.shed = shed // answered once the last fragment is in
					return false, nil
				}
				return false, c.sendBack(shed)
			}
			c.a.warnOnce.Do(func() {
				c.a.log.Warn("cannot send clients back: passing their calls on instead", "err", err)
			})
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		call.End() // the client reissues it after CloseConnection
		return false, nil
	}
	if old, dup := c.pending[req.RequestID]; dup {
		old.End()
	}
	c.pending[req.RequestID] = call
	return true, nil
}

// sendBack answers req with LOCATION_FORWARD to the group, in its version
// and byte order.
func (c *conn) sendBack(req *giop.Request) error {
	ref, err := c.a.groupRef()
	if err != nil {
		return err
	}
	rep := giop.ReplyTo(req, giop.StatusLocationForward)
	rep.SetForward(ref, false)
	out, err := giop.EncodeMessage(rep)
	if err != nil {
		return fmt.Errorf("giopagent: encode LOCATION_FORWARD: %w", err)
	}
	c.a.forwards.Add(1)
	return c.writeClient(out)
}

// targetLoop passes the target's messages to the client and ends the calls
// they reply to.
func (c *conn) targetLoop(r *wire.Framer) (err error) {
	lim := c.a.opts.Limits
	var buf []byte
	holding := false // wmu held across a GIOP 1.1 fragmented reply
	defer func() {
		if holding {
			c.wmu.Unlock()
		}
	}()
	for {
		h, msg, err := r.Read(buf, time.Time{})
		buf = msg
		if err != nil {
			if wire.IsProtocolError(err) {
				return fmt.Errorf("%w: %w", errProtocol, err)
			}
			return err
		}
		m, err := lim.DecodeMessage(msg)
		if err != nil {
			return fmt.Errorf("%w: from the target: %w", errProtocol, err)
		}
		if c.out.V11() != nil && h.Type != giop.MsgFragment {
			return fmt.Errorf("%w: the target sent a GIOP %v %v inside a fragmented GIOP 1.1 message", errProtocol, h.Version, h.Type)
		}
		ends, endID := false, uint32(0)
		switch m := m.(type) {
		case *giop.Reply:
			if h.MoreFragments {
				t, err := c.out.Open(h.Version, m.RequestID)
				if err != nil {
					return fmt.Errorf("%w (from the target)", err)
				}
				t.Data.call = true
			} else {
				ends, endID = true, m.RequestID
			}
		case *giop.Fragment:
			t, last, err := c.out.Next(h, m.RequestID)
			if err != nil {
				return fmt.Errorf("%w (from the target)", err)
			}
			if last && t.Data.call {
				ends, endID = true, t.ID
			}
		default:
			if h.MoreFragments {
				id, _ := wire.RequestID(m)
				if _, err := c.out.Open(h.Version, id); err != nil {
					return fmt.Errorf("%w (from the target)", err)
				}
			}
		}
		if !holding {
			c.wmu.Lock()
		}
		_, werr := c.client.Write(msg)
		holding = c.out.V11() != nil
		if !holding {
			c.wmu.Unlock()
		}
		if werr != nil {
			return fmt.Errorf("giopagent: write to client: %w", werr)
		}
		if ends {
			c.mu.Lock()
			if call, ok := c.pending[endID]; ok {
				call.End()
				delete(c.pending, endID)
			}
			c.mu.Unlock()
		}
	}
}

// writeClient writes one whole message to the client.
func (c *conn) writeClient(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.client.Write(msg); err != nil {
		return fmt.Errorf("giopagent: write to client: %w", err)
	}
	return nil
}

// messageError tells the client its input was not understood.
func (c *conn) messageError(v giop.Version) {
	out, err := giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: v}})
	if err == nil {
		_ = c.writeClient(out)
	}
}

// Draining a client's connection after MessageError: at most lingerBytes
// for lingerTime.
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 64 << 10
)

// linger ends the sending side of the client's connection after a
// MessageError and reads what the client still sends (bounded), so that
// closing with unread input does not reset the connection before the
// client has read the MessageError. The caller closes the connection.
func (c *conn) linger() {
	cw, ok := c.client.(interface{ CloseWrite() error })
	if !ok {
		return
	}
	_ = cw.CloseWrite()
	_ = c.client.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.client, lingerBytes))
}

// closeIfIdle sends CloseConnection and closes the connection if no call is
// in flight on it. Used by Shutdown.
func (c *conn) closeIfIdle() {
	c.mu.Lock()
	if c.closing || c.closed || len(c.pending) > 0 {
		c.mu.Unlock()
		return
	}
	c.closing = true
	v := c.version
	if !v.Supported() {
		v = giop.V10 // nothing received yet
	}
	c.mu.Unlock()
	// CloseConnection tells the client's ORB that nothing it sent from now
	// on was or will be processed, so it may reissue it elsewhere.
	if out, err := giop.EncodeMessage(&giop.CloseConnection{Envelope: giop.Envelope{Version: v}}); err == nil {
		_ = c.client.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
		_ = c.writeClient(out)
	}
	c.close()
}

// close closes both connections; the loops then end.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.client.Close()
	if c.upstream != nil {
		c.upstream.Close()
	}
}
