package giopconn

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// CloseWriteTimeout bounds writing a connection's last message
// (CloseConnection, MessageError).
const CloseWriteTimeout = time.Second

// Bounds of the linger after a MessageError (Options.Linger).
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 64 << 10
)

// Options configure a Conn.
type Options struct {
	// Closing reports whether the server is shutting down: the last work
	// to leave then closes the connection. Never closing when nil.
	Closing func() bool
	// Logger receives the protocol errors answered by Fail, at debug
	// level; slog.Default() when nil.
	Logger *slog.Logger
	// Linger makes Fail end the sending side and read what the client
	// still sends before closing (see Fail).
	Linger bool
}

// Conn is the life of one GIOP client connection at a front door. Safe for
// concurrent use; its reader (the front door's read loop) is not part of
// it.
type Conn struct {
	nc   net.Conn
	opts Options
	// gone is closed when nc is.
	gone     chan struct{}
	goneOnce sync.Once

	// wmu serialises writes.
	wmu sync.Mutex

	// mu guards what follows.
	mu sync.Mutex
	// busy counts the work in flight (Enter, Leave).
	busy   int
	closed bool
	// version and order of the client's last message, for
	// CloseConnection.
	version giop.Version
	order   cdr.ByteOrder
}

// New returns the Conn of nc, which it closes when the connection ends.
// Until the client's first message it answers in GIOP 1.0, big-endian.
func New(nc net.Conn, opts Options) *Conn {
	if opts.Closing == nil {
		opts.Closing = func() bool { return false }
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Conn{nc: nc, opts: opts, gone: make(chan struct{}), version: giop.V10}
}

// Gone is closed when the connection is: it ends the front door's waits
// (for buffer memory, for a call slot).
func (c *Conn) Gone() <-chan struct{} { return c.gone }

// Saw records the version and byte order of the client's last message,
// which CloseIfIdle answers in.
func (c *Conn) Saw(h giop.Header) {
	c.mu.Lock()
	c.version, c.order = h.Version, h.Order
	c.mu.Unlock()
}

// Enter counts work in flight (a message being answered, a call); false
// when the connection is closing, and nothing was counted.
func (c *Conn) Enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.busy++
	return true
}

// Leave uncounts what Enter counted; the last one out of a shutting-down
// server (Options.Closing) closes the connection.
func (c *Conn) Leave() {
	c.mu.Lock()
	c.busy--
	last := c.busy == 0 && c.opts.Closing()
	c.mu.Unlock()
	if last {
		c.CloseIfIdle()
	}
}

// CloseIfIdle closes the connection, with a CloseConnection first (in the
// version and order of the client's last message), when nothing is in
// flight on it. It reports whether the connection is closed.
func (c *Conn) CloseIfIdle() bool {
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
	c.close()
	return true
}

// Fail answers a protocol error of the client, err, with a MessageError
// in version v (the highest when v is not supported) and order o, and
// closes the connection. With Options.Linger it first ends the sending
// side and reads what the client still sends (at most 64 KiB for half a
// second), so that closing with unread input does not reset the
// connection before the client has read the MessageError; closing the
// connection (Abort) ends that at once.
func (c *Conn) Fail(v giop.Version, o cdr.ByteOrder, err error) {
	c.opts.Logger.Debug("GIOP protocol error from client", "remote", c.nc.RemoteAddr().String(), "err", err)
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if !v.Supported() {
		v = giop.Highest
	}
	c.writeLast(MessageError(v, o))
	if c.opts.Linger {
		c.linger()
	}
	c.close()
}

// linger ends the sending side and reads what the client still sends,
// within lingerBytes and lingerTime.
func (c *Conn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok {
		return
	}
	_ = cw.CloseWrite()
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, lingerBytes))
}

// Abort closes the connection at once.
func (c *Conn) Abort() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.close()
}

// Send writes m within timeout. A failed write closes the connection.
func (c *Conn) Send(m giop.Message, timeout time.Duration) error {
	b, err := giop.EncodeMessage(m)
	if err != nil {
		return err
	}
	return c.SendBytes(b, timeout)
}

// SendBytes writes the encoded message b within timeout. A failed write
// closes the connection.
func (c *Conn) SendBytes(b []byte, timeout time.Duration) error {
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(b)
	c.wmu.Unlock()
	if err != nil {
		c.close()
	}
	return err
}

// writeLast writes a connection's last message, bounded by
// CloseWriteTimeout.
func (c *Conn) writeLast(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(CloseWriteTimeout))
	_, _ = c.nc.Write(b)
}

// close closes nc and Gone.
func (c *Conn) close() {
	c.goneOnce.Do(func() { close(c.gone) })
	_ = c.nc.Close()
}
