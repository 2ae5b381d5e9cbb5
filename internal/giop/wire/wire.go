// Package wire reads and writes whole GIOP messages on a byte stream: the
// framing a GIOP server or client ORB needs around the codec of package giop.
// A Reader checks each header before reading its body (so message_size is
// bounded by the limit before anything is allocated) and joins GIOP 1.2
// fragmented messages; a Writer serialises whole messages from several
// goroutines onto one connection.
//
// Usage, on a server connection:
//
//	r := wire.NewReader(conn, giop.Limits{})
//	for {
//		b, err := r.Next()
//		if wire.IsProtocolError(err) {
//			// answer MessageError in r.Version() and close
//		}
//		if err != nil {
//			return // connection closed or broken
//		}
//		m, err := giop.DecodeMessage(b)
//		...
//	}
package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
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

// Reader reads whole messages. Not safe for concurrent use.
type Reader struct {
	r       io.Reader
	limits  giop.Limits
	max     int
	version giop.Version
	hdr     [giop.HeaderSize]byte
	// pending holds the GIOP 1.2 messages in pieces, by request id: the
	// bytes so far, header included.
	pending map[uint32][]byte
}

// readBuffer is the Reader's buffer: a small message (a call of the Prime
// interface, its reply) comes in one read system call, header and body.
const readBuffer = 4 << 10

// NewReader returns a Reader of r with the given limits (zero: defaults).
// It reads r through a buffer of its own, so it may read past the message
// it returns: use only the Reader to read r.
func NewReader(r io.Reader, limits giop.Limits) *Reader {
	max := limits.MaxMessageSize
	if max <= 0 {
		max = giop.DefaultMaxMessageSize
	}
	return &Reader{r: bufio.NewReaderSize(r, readBuffer), limits: limits, max: max, version: giop.Highest}
}

// Version is the version of the last header read with a supported version:
// the one to send MessageError in. giop.Highest before the first.
func (r *Reader) Version() giop.Version { return r.version }

// Next returns the next whole message, header included, in a buffer of its
// own (decoded messages may alias it). A message sent in GIOP 1.2 fragments
// is returned once its last fragment has come, as one message without the
// more-fragments flag. At a clean end of stream between messages it returns
// io.EOF; a stream that ends inside a message gives io.ErrUnexpectedEOF.
// Errors for which IsProtocolError is true leave the stream unusable.
func (r *Reader) Next() ([]byte, error) {
	for {
		if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
			return nil, err
		}
		h, err := r.limits.ParseHeader(r.hdr[:])
		if h.Version.Supported() {
			r.version = h.Version
		}
		if err != nil {
			return nil, err
		}
		msg := make([]byte, giop.HeaderSize+int(h.Size))
		copy(msg, r.hdr[:])
		if _, err := io.ReadFull(r.r, msg[giop.HeaderSize:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		whole, err := r.join(h, msg)
		if err != nil || whole != nil {
			return whole, err
		}
	}
}

// join handles fragments: it returns msg itself when it is whole, nil when
// it is a piece to keep, and the joined message when msg is the last piece.
func (r *Reader) join(h giop.Header, msg []byte) ([]byte, error) {
	if h.Type != giop.MsgFragment {
		if !h.MoreFragments {
			return msg, nil
		}
		if h.Version != giop.V12 {
			return nil, fmt.Errorf("%w: a fragmented %v message in GIOP %v (only GIOP 1.2 fragments are joined)", ErrFragment, h.Type, h.Version)
		}
		if h.Size < 4 {
			return nil, fmt.Errorf("%w: a fragmented %v message of %d bytes has no request_id", ErrFragment, h.Type, h.Size)
		}
		id := h.Order.Uint32(msg[giop.HeaderSize:])
		if _, dup := r.pending[id]; dup {
			return nil, fmt.Errorf("%w: request %d started again before its last fragment", ErrFragment, id)
		}
		if len(r.pending) >= MaxPending {
			return nil, fmt.Errorf("%w: more than %d messages in fragments at once", ErrFragment, MaxPending)
		}
		if r.pending == nil {
			r.pending = map[uint32][]byte{}
		}
		r.pending[id] = msg
		return nil, nil
	}
	if h.Version != giop.V12 {
		return nil, fmt.Errorf("%w: a Fragment in GIOP %v (only GIOP 1.2 fragments are joined)", ErrFragment, h.Version)
	}
	if h.Size < 4 {
		return nil, fmt.Errorf("%w: a Fragment of %d bytes has no request_id", ErrFragment, h.Size)
	}
	id := h.Order.Uint32(msg[giop.HeaderSize:])
	first, ok := r.pending[id]
	if !ok {
		return nil, fmt.Errorf("%w: a Fragment for request %d, which has no message in pieces", ErrFragment, id)
	}
	data := msg[giop.HeaderSize+4:]
	if len(first)+len(data)-giop.HeaderSize > r.max {
		delete(r.pending, id)
		return nil, fmt.Errorf("%w: request %d joined from fragments exceeds %d bytes", giop.ErrTooLarge, id, r.max)
	}
	joined := append(first, data...)
	if h.MoreFragments {
		r.pending[id] = joined
		return nil, nil
	}
	delete(r.pending, id)
	order := cdr.BigEndian
	if joined[6]&0x01 != 0 {
		order = cdr.LittleEndian
	}
	joined[6] &^= 0x02 // more fragments
	order.PutUint32(joined[8:], uint32(len(joined)-giop.HeaderSize))
	return joined, nil
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
