package giop

import (
	"fmt"
	"math"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// HeaderSize is the length of the GIOP message header.
const HeaderSize = 12

// DefaultMaxMessageSize is the largest message_size accepted unless
// [Limits] says otherwise: 16 MiB.
const DefaultMaxMessageSize = 16 << 20

const (
	flagLittleEndian  = 0x01
	flagMoreFragments = 0x02 // GIOP 1.1 and later
)

// Header is the 12-byte header every GIOP message starts with
// (GIOP::MessageHeader_1_1; CORBA 3.x, GIOP chapter, "GIOP Message Header").
type Header struct {
	Version Version
	// Order is the byte order of the message (flags bit 0; the byte_order
	// boolean in GIOP 1.0).
	Order cdr.ByteOrder
	// MoreFragments is flags bit 1 (GIOP 1.1 and later): Fragment messages
	// with the same request follow.
	MoreFragments bool
	Type          MsgType
	// Size is message_size: the number of bytes after the header.
	Size uint32
}

// Limits bounds what the decoder accepts. The zero value applies the
// defaults.
type Limits struct {
	// MaxMessageSize is the largest message_size accepted, in bytes after
	// the header. Default DefaultMaxMessageSize (16 MiB); values ≤ 0 mean the
	// default.
	MaxMessageSize int
}

func (l Limits) maxMessageSize() uint64 {
	if l.MaxMessageSize <= 0 {
		return DefaultMaxMessageSize
	}
	return uint64(l.MaxMessageSize)
}

// ParseHeader parses the header at the start of b with the default limits.
func ParseHeader(b []byte) (Header, error) { return Limits{}.ParseHeader(b) }

// ParseHeader parses the header at the start of b (at least HeaderSize
// bytes; the rest is ignored). It checks the magic, the version, the flags,
// the message type against the version, and message_size against the limit,
// so a reader can trust Size before reading that many bytes. On error the
// returned Header holds the fields read before the problem.
func (l Limits) ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("%w: header: need %d bytes, have %d", ErrMalformed, HeaderSize, len(b))
	}
	if string(b[:4]) != "GIOP" {
		return h, fmt.Errorf("%w: %q at offset 0, want \"GIOP\"", ErrBadMagic, b[:4])
	}
	h.Version = Version{b[4], b[5]}
	if !h.Version.Supported() {
		return h, fmt.Errorf("%w: %v at offset 4", ErrVersion, h.Version)
	}
	flags := b[6]
	if h.Version.atLeast(1) {
		if flags&^(flagLittleEndian|flagMoreFragments) != 0 {
			return h, fmt.Errorf("%w: flags 0x%02x at offset 6: reserved bits set", ErrMalformed, flags)
		}
	} else if flags > 1 {
		return h, fmt.Errorf("%w: byte_order %d at offset 6, want 0 or 1", ErrMalformed, flags)
	}
	h.Order = cdr.ByteOrder(flags & flagLittleEndian)
	h.MoreFragments = flags&flagMoreFragments != 0
	h.Type = MsgType(b[7])
	if !h.Type.validIn(h.Version) {
		return h, fmt.Errorf("%w: message_type %d at offset 7: unknown in GIOP %v", ErrMalformed, b[7], h.Version)
	}
	if h.MoreFragments && !h.Type.fragmentableIn(h.Version) {
		return h, fmt.Errorf("%w: more-fragments flag on a GIOP %v %v", ErrMalformed, h.Version, h.Type)
	}
	h.Size = h.Order.Uint32(b[8:12])
	if uint64(h.Size) > l.maxMessageSize() {
		return h, fmt.Errorf("%w: message_size %d at offset 8 exceeds the limit of %d", ErrTooLarge, h.Size, l.maxMessageSize())
	}
	return h, nil
}

// appendHeader writes h with its Size, at e's position, which must be the
// start of the message.
func appendHeader(e *cdr.Encoder, h Header) {
	flags := byte(h.Order)
	if h.MoreFragments {
		flags |= flagMoreFragments
	}
	e.Raw([]byte{'G', 'I', 'O', 'P', h.Version.Major, h.Version.Minor, flags, byte(h.Type)})
	e.ULong(h.Size)
}

// checkSize reports whether n bytes after a header fit in message_size.
func checkSize(n int) error {
	if n > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes after the header exceed message_size's range", ErrInvalid, n)
	}
	return nil
}
