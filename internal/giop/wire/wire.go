package wire

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// ErrFragment is wrapped by the errors about fragments: a Fragment with no
// message to continue, a fragmented message of GIOP 1.1 (whose pieces align
// each on their own and cannot be joined by concatenation; fulcrum's ORB and
// servant never send them), too many messages in pieces at once, or a joined
// message beyond the size limit. It also matches giop.ErrMalformed.
var ErrFragment = fmt.Errorf("%w: fragment misuse", giop.ErrMalformed)

// MaxPending bounds the fragmented messages a Reader joins at once.
const MaxPending = 16

// IsProtocolError reports whether err means the peer sent bytes that are not
// GIOP as this side understands it: the answer is MessageError and closing
// the connection. I/O errors (io.EOF included) are not protocol errors.
func IsProtocolError(err error) bool {
	return errors.Is(err, giop.ErrBadMagic) || errors.Is(err, giop.ErrVersion) ||
		errors.Is(err, giop.ErrTooLarge) || errors.Is(err, giop.ErrMalformed)
}

// Reader reads whole messages: a Framer and a Joiner of GIOP 1.2
// fragments. Not safe for concurrent use.
type Reader struct {
	f   *Framer
	j   *Joiner
	max int
}

// NewReader returns a Reader of r with the given limits (zero: defaults).
// It reads r through a buffer of its own, so it may read past the message
// it returns: use only the Reader to read r.
func NewReader(r io.Reader, limits giop.Limits) *Reader {
	max := limits.MaxMessageSize
	if max <= 0 {
		max = giop.DefaultMaxMessageSize
	}
	return &Reader{f: NewFramer(r, FramerOptions{Limits: limits}), j: NewJoiner(JoinerOptions{MaxOpen: MaxPending}), max: max}
}

// Version is the version of the last header read with a supported version:
// the one to send MessageError in. giop.Highest before the first.
func (r *Reader) Version() giop.Version { return r.f.Version() }

// Next returns the next whole message, header included, in a buffer of its
// own (decoded messages may alias it). A message sent in GIOP 1.2 fragments
// is returned once its last fragment has come, as one message without the
// more-fragments flag. At a clean end of stream between messages it returns
// io.EOF; a stream that ends inside a message gives io.ErrUnexpectedEOF.
// Errors for which IsProtocolError is true leave the stream unusable.
func (r *Reader) Next() ([]byte, error) {
	for {
		h, msg, err := r.f.Read(nil, time.Time{})
		if err != nil {
			return nil, err
		}
		whole, _, err := r.j.Add(h, msg, r.max)
		if err != nil || whole != nil {
			return whole, err
		}
	}
}

// Writer writes whole messages to w. Safe for concurrent use: each message
// is written in one Write, and messages do not interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write encodes m and writes it.
func (w *Writer) Write(m giop.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := giop.AppendMessage(w.buf[:0], m)
	if err != nil {
		return err
	}
	w.buf = b
	if cap(w.buf) > 64<<10 {
		w.buf = nil // do not keep a large buffer for small messages
	}
	_, err = w.w.Write(b)
	return err
}
