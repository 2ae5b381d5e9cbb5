package orb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// errPeerClosed: the server sent CloseConnection. Requests it had not
// answered were not processed (CORBA 3.x, GIOP chapter, "CloseConnection
// Message") and may be sent again.
var errPeerClosed = errors.New("orb: the server closed the connection (CloseConnection)")

// conn is one client connection, shared by every call to its endpoint.
// A reader goroutine hands each reply to the call waiting for its request
// id. Once broken, a conn stays broken and leaves the ORB's table.
type conn struct {
	orb  *ORB
	addr string
	nc   net.Conn
	w    *wire.Writer

	mu      sync.Mutex
	nextID  uint32
	waiting map[uint32]chan giop.Message
	err     error // why the conn broke; nil while usable
	done    chan struct{}
}

func newConn(o *ORB, addr string, nc net.Conn) *conn {
	c := &conn{orb: o, addr: addr, nc: nc, w: wire.NewWriter(nc), waiting: map[uint32]chan giop.Message{}, done: make(chan struct{})}
	go c.readLoop()
	return c
}

// readLoop delivers replies until the connection ends.
func (c *conn) readLoop() {
	r := wire.NewReader(c.nc, c.orb.opts.Limits)
	for {
		b, err := r.Next()
		if err != nil {
			if wire.IsProtocolError(err) {
				_ = c.w.Write(&giop.MessageError{Envelope: giop.Envelope{Version: r.Version()}})
				err = fmt.Errorf("orb: %s sent a message this ORB cannot read: %w", c.addr, err)
			} else if errors.Is(err, io.EOF) {
				err = fmt.Errorf("orb: %s closed the connection", c.addr)
			}
			c.fail(err)
			return
		}
		m, err := c.orb.opts.Limits.DecodeMessage(b)
		if err != nil {
			_ = c.w.Write(&giop.MessageError{Envelope: giop.Envelope{Version: r.Version()}})
			c.fail(fmt.Errorf("orb: %s sent a message this ORB cannot read: %w", c.addr, err))
			return
		}
		switch m := m.(type) {
		case *giop.Reply:
			c.deliver(m.RequestID, m)
		case *giop.LocateReply:
			c.deliver(m.RequestID, m)
		case *giop.CloseConnection:
			c.fail(errPeerClosed)
			return
		case *giop.MessageError:
			c.fail(fmt.Errorf("orb: %s answered MessageError", c.addr))
			return
		default:
			// Requests from the server (bidirectional GIOP) and stray
			// fragments are not for a client that never offered them.
			_ = c.w.Write(&giop.MessageError{Envelope: giop.EnvelopeOf(m)})
			c.fail(fmt.Errorf("orb: %s sent a %v, which a client does not accept", c.addr, m.Type()))
			return
		}
	}
}

// deliver hands a reply to its waiting call; a reply nobody waits for (the
// call was cancelled) is dropped.
func (c *conn) deliver(id uint32, m giop.Message) {
	c.mu.Lock()
	ch, ok := c.waiting[id]
	delete(c.waiting, id)
	c.mu.Unlock()
	if ok {
		ch <- m
	}
}

// fail breaks the connection: it leaves the ORB's table, the socket is
// closed and every waiting call learns why.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.waiting = nil
	close(c.done)
	c.mu.Unlock()
	c.orb.forget(c)
	_ = c.nc.Close()
}

// broken returns why the conn broke, nil while it is usable.
func (c *conn) broken() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// sendError is a failure to send the request: the server did not get it
// whole, so it did not run (a prefix of a message is not acted on).
type sendError struct {
	err error
}

func (e *sendError) Error() string { return e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// brokenError is a connection that broke after the request was sent: the
// call may have run, unless the server closed it in order (errPeerClosed).
type brokenError struct {
	err error
}

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// roundTrip sends the message setID makes with a fresh request id and
// waits for its reply. A nil reply channel (oneway) returns at once after
// sending. On ctx's end it sends CancelRequest and returns ctx's error.
func (c *conn) roundTrip(ctx context.Context, m giop.Message, setID func(uint32), twoway bool) (giop.Message, error) {
	ch := make(chan giop.Message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, &sendError{err: err}
	}
	c.nextID++
	id := c.nextID
	if twoway {
		c.waiting[id] = ch
	}
	c.mu.Unlock()
	setID(id)
	if err := c.w.Write(m); err != nil {
		if !errors.Is(err, giop.ErrInvalid) && !errors.Is(err, giop.ErrBodyMisaligned) {
			// A write that failed half-way may have delivered a prefix,
			// which the server cannot act on without the rest.
			c.fail(fmt.Errorf("orb: writing to %s: %w", c.addr, err))
		}
		c.forgetWait(id)
		return nil, &sendError{err: err}
	}
	if !twoway {
		return nil, nil
	}
	select {
	case rep := <-ch:
		return rep, nil
	case <-c.done:
		select {
		case rep := <-ch: // delivered just before the break
			return rep, nil
		default:
		}
		return nil, &brokenError{err: c.broken()}
	case <-ctx.Done():
		c.forgetWait(id)
		env := giop.EnvelopeOf(m)
		env.MoreFragments = false
		_ = c.w.Write(&giop.CancelRequest{Envelope: env, RequestID: id})
		return nil, ctx.Err()
	}
}

func (c *conn) forgetWait(id uint32) {
	c.mu.Lock()
	if c.waiting != nil {
		delete(c.waiting, id)
	}
	c.mu.Unlock()
}

// close says CloseConnection (GIOP 1.2) when nothing waits for a reply and
// closes the socket.
func (c *conn) close() {
	c.mu.Lock()
	idle := c.err == nil && len(c.waiting) == 0
	c.mu.Unlock()
	// Clients may send CloseConnection from GIOP 1.2 on; before, only
	// servers do.
	if idle && c.orb.opts.Version == giop.V12 {
		_ = c.w.Write(&giop.CloseConnection{Envelope: giop.Envelope{Version: c.orb.opts.Version, Order: c.orb.opts.Order}})
	}
	c.fail(ErrClosed)
}
