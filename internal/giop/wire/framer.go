package wire

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// ErrIdle is returned by Framer.Wait when no message began within the idle
// time.
var ErrIdle = errors.New("wire: connection idle")

// DefaultBufferSize is a Framer's read buffer unless FramerOptions says
// otherwise: a small message (a call of the Prime interface, its reply)
// comes in one read system call, header and body.
const DefaultBufferSize = 4 << 10

// FramerOptions configure a Framer. The zero value is usable.
type FramerOptions struct {
	// Limits bound message_size (zero: giop's defaults); SetLimits
	// changes them between messages.
	Limits giop.Limits
	// BufferSize is the read buffer's size; DefaultBufferSize when zero.
	BufferSize int
	// Budget, when set, is taken from for every byte a message's buffer
	// grows beyond BufferSize, and given back when Read returns: with a
	// Budget shared by many connections, what their half-read messages
	// hold together stays within it, but for one message (see Budget).
	Budget *Budget
	// Cancel, when it closes, ends a wait for the Budget (the connection
	// is going away).
	Cancel <-chan struct{}
}

// Framer reads GIOP messages one at a time from a byte stream, as they
// are: Fragments are returned as they come (see Joiner and Tracker for
// what to do with them). Each header is checked against the limits before
// its body is read, and a body is read as it arrives: the buffer grows
// with the bytes that came, never to what the header merely claims. Not
// safe for concurrent use.
type Framer struct {
	br      *bufio.Reader
	dl      interface{ SetReadDeadline(time.Time) error } // nil when the stream has no deadlines
	opts    FramerOptions
	free    int // bytes of a message not charged to the budget
	version giop.Version
	hdr     [giop.HeaderSize]byte
}

// NewFramer returns a Framer of r. It reads r through a buffer of its
// own, so it may read past the message it returns: use only the Framer
// to read r. When r has SetReadDeadline (a net.Conn), Wait and Read's
// deadline use it.
func NewFramer(r io.Reader, opts FramerOptions) *Framer {
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultBufferSize
	}
	f := &Framer{br: bufio.NewReaderSize(r, opts.BufferSize), opts: opts, free: opts.BufferSize, version: giop.Highest}
	f.dl, _ = r.(interface{ SetReadDeadline(time.Time) error })
	return f
}

// SetLimits changes the limits for the messages read from now on.
func (f *Framer) SetLimits(l giop.Limits) { f.opts.Limits = l }

// Version is the version of the last header read with a supported
// version: the one to send MessageError in. giop.Highest before the first.
func (f *Framer) Version() giop.Version { return f.version }

// Buffered reports whether bytes of the next message are already read.
func (f *Framer) Buffered() bool { return f.br.Buffered() > 0 }

// Wait waits up to idle for the next message to begin and returns ErrIdle
// if none does; any other error is the stream's (io.EOF at its end). A
// zero idle leaves the stream's deadline as it is.
func (f *Framer) Wait(idle time.Duration) error {
	if idle > 0 && f.dl != nil {
		_ = f.dl.SetReadDeadline(time.Now().Add(idle))
	}
	if _, err := f.br.Peek(1); err != nil {
		var ne net.Error
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return ErrIdle
		}
		return err
	}
	return nil
}

// Read reads the next message, header included, into buf's storage
// (growing it as the body arrives; nil for a fresh buffer) and returns its
// header and bytes. A deadline, when not zero, becomes the stream's read
// deadline and bounds a wait for the Budget. At a clean end of stream
// before a message it returns io.EOF; a stream that ends inside one gives
// io.ErrUnexpectedEOF. A header that breaks GIOP or the limits is an
// error for which IsProtocolError is true, returned with what of the
// header could be parsed; the stream is unusable after it.
func (f *Framer) Read(buf []byte, deadline time.Time) (giop.Header, []byte, error) {
	if !deadline.IsZero() && f.dl != nil {
		_ = f.dl.SetReadDeadline(deadline)
	}
	if _, err := io.ReadFull(f.br, f.hdr[:]); err != nil {
		return giop.Header{}, buf[:0], err
	}
	h, err := f.opts.Limits.ParseHeader(f.hdr[:])
	if h.Version.Supported() {
		f.version = h.Version
	}
	if err != nil {
		return h, buf[:0], err
	}
	n := giop.HeaderSize + int(h.Size)
	if cap(buf) < min(n, f.free) {
		buf = make([]byte, 0, min(n, f.free))
	}
	buf = append(buf[:0], f.hdr[:]...)
	charged := 0
	defer func() {
		f.opts.Budget.release(charged)
		f.opts.Budget.done(f)
	}()
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := min(n, max(2*cap(buf), f.free))
			if need := max(grown-f.free, 0) - charged; need > 0 {
				if err := f.opts.Budget.acquire(f, need, deadline, f.opts.Cancel); err != nil {
					return h, buf, err
				}
				charged += need
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		k, err := f.br.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+k]
		if err != nil && len(buf) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return h, buf, err
		}
	}
	return h, buf, nil
}
