package cdr

import (
	"fmt"
	"math"
)

var zeros [8]byte

// Encoder appends CDR-encoded values to a byte slice.
//
// Alignment is computed from an alignment origin: position 0 is the start of
// the GIOP message (or of the innermost encapsulation being written). Writes
// never fail; callers check semantic limits themselves.
//
// Not safe for concurrent use.
type Encoder struct {
	buf    []byte
	origin int // index in buf of alignment position 0; may be negative
	order  ByteOrder
	onPad  func(at, n int)
}

// NewEncoder returns an encoder that appends to dst in the given byte order.
// offset is the alignment position of the first appended byte: 0 when the
// encoder writes a message from its first header byte, the body's offset
// when it writes a message body on its own. It panics if offset is negative.
func NewEncoder(dst []byte, order ByteOrder, offset int) *Encoder {
	if offset < 0 {
		panic(fmt.Sprintf("cdr: NewEncoder with negative offset %d", offset))
	}
	return &Encoder{buf: dst, origin: len(dst) - offset, order: order}
}

// TrackPadding calls fn(at, n) for every run of n alignment-padding octets
// the encoder writes from now on, at index at of [Encoder.Bytes]; fn nil stops
// tracking. Tests use it to tell padding from data when comparing an encoding
// with bytes captured from another ORB.
func (e *Encoder) TrackPadding(fn func(at, n int)) { e.onPad = fn }

// Bytes returns dst with everything written so far appended.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns len(Bytes()).
func (e *Encoder) Len() int { return len(e.buf) }

// Offset returns the alignment position of the next byte: its distance from
// the alignment origin (message start or innermost encapsulation start).
func (e *Encoder) Offset() int { return len(e.buf) - e.origin }

// Order returns the byte order values are currently written in.
func (e *Encoder) Order() ByteOrder { return e.order }

// Align writes zero octets up to the next multiple of n (1, 2, 4 or 8).
func (e *Encoder) Align(n int) {
	pad := Padding(e.Offset(), n)
	if pad == 0 {
		return
	}
	if e.onPad != nil {
		e.onPad(len(e.buf), pad)
	}
	e.buf = append(e.buf, zeros[:pad]...)
}

// Octet writes one octet.
func (e *Encoder) Octet(v byte) { e.buf = append(e.buf, v) }

// Boolean writes a boolean as the octet 1 or 0.
func (e *Encoder) Boolean(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// UShort writes an unsigned short, aligned on 2.
func (e *Encoder) UShort(v uint16) {
	e.Align(2)
	e.buf = e.order.appendUint16(e.buf, v)
}

// Short writes a short, aligned on 2.
func (e *Encoder) Short(v int16) { e.UShort(uint16(v)) }

// ULong writes an unsigned long (32 bits), aligned on 4.
func (e *Encoder) ULong(v uint32) {
	e.Align(4)
	e.buf = e.order.appendUint32(e.buf, v)
}

// Long writes a long (32 bits), aligned on 4.
func (e *Encoder) Long(v int32) { e.ULong(uint32(v)) }

// ULongLong writes an unsigned long long, aligned on 8.
func (e *Encoder) ULongLong(v uint64) {
	e.Align(8)
	e.buf = e.order.appendUint64(e.buf, v)
}

// LongLong writes a long long, aligned on 8.
func (e *Encoder) LongLong(v int64) { e.ULongLong(uint64(v)) }

// Float writes an IEEE single, aligned on 4.
func (e *Encoder) Float(v float32) { e.ULong(math.Float32bits(v)) }

// Double writes an IEEE double, aligned on 8.
func (e *Encoder) Double(v float64) { e.ULongLong(math.Float64bits(v)) }

// Raw appends b as is: no length, no alignment.
func (e *Encoder) Raw(b []byte) { e.buf = append(e.buf, b...) }

// OctetSeq writes a sequence<octet>: its length as an unsigned long, then b.
func (e *Encoder) OctetSeq(b []byte) {
	e.ULong(uint32(len(b)))
	e.buf = append(e.buf, b...)
}

// String writes a string: its length including the terminating NUL as an
// unsigned long, the octets, then NUL (CORBA 3.x, GIOP chapter, "CDR
// Transfer Syntax" › "Strings and Wide Strings").
func (e *Encoder) String(s string) {
	e.ULong(uint32(len(s) + 1))
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, 0)
}

// Encapsulation writes an encapsulation: an octet sequence whose first
// octet is order and whose remaining contents, written by fn on this same
// encoder, are encoded in order and aligned relative to that first octet
// (CORBA 3.x, GIOP chapter, "CDR Transfer Syntax" › "Encapsulation").
// The length is filled in when fn returns.
func (e *Encoder) Encapsulation(order ByteOrder, fn func(*Encoder)) {
	e.Align(4)
	lenAt := len(e.buf)
	e.buf = append(e.buf, 0, 0, 0, 0)
	outerOrigin, outerOrder := e.origin, e.order
	e.origin, e.order = len(e.buf), order
	e.buf = append(e.buf, byte(order))
	fn(e)
	n := len(e.buf) - e.origin
	e.origin, e.order = outerOrigin, outerOrder
	e.order.PutUint32(e.buf[lenAt:], uint32(n))
}
