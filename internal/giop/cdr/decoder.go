package cdr

import (
	"fmt"
	"math"
)

// Decoder reads CDR-encoded values from a byte slice.
//
// Every read names the field it decodes. The first failure is kept and
// later reads return zero values, so a run of reads needs one check of
// [Decoder.Err] at the end. Slices returned by [Decoder.OctetSeq],
// [Decoder.Octets] and [Decoder.Rest] alias the input (with their capacity
// cut to their length) and stay valid as long as the input does.
//
// Not safe for concurrent use.
type Decoder struct {
	buf    []byte
	pos    int // index of the next byte in buf
	end    int // index after the last byte readable in the current scope
	origin int // index of alignment position 0; may be negative
	base   int // offset reported for buf[0]
	order  ByteOrder
	err    error
}

// NewDecoder returns a decoder reading b in the given byte order. offset is
// the alignment position of b[0], and also what error offsets are counted
// from: 0 for a whole message, the body's offset when b is a message body.
// It panics if offset is negative.
func NewDecoder(b []byte, order ByteOrder, offset int) *Decoder {
	if offset < 0 {
		panic(fmt.Sprintf("cdr: NewDecoder with negative offset %d", offset))
	}
	return &Decoder{buf: b, end: len(b), origin: -offset, base: offset, order: order}
}

// Err returns the first failure, an [*Error], or nil.
func (d *Decoder) Err() error { return d.err }

// Order returns the byte order values are currently read in.
func (d *Decoder) Order() ByteOrder { return d.order }

// Offset returns the position of the next byte counted like error offsets
// (from the start of the outermost buffer, shifted by NewDecoder's offset).
func (d *Decoder) Offset() int { return d.base + d.pos }

// AlignOffset returns the alignment position of the next byte: its distance
// from the start of the message or of the innermost encapsulation.
func (d *Decoder) AlignOffset() int { return d.pos - d.origin }

// Remaining returns how many bytes are left in the current scope (the
// buffer, or the innermost encapsulation).
func (d *Decoder) Remaining() int { return d.end - d.pos }

// Fail records err (one of the package's sentinels) for field at offset at
// (as returned by [Decoder.Offset]) unless a failure is already recorded.
// Callers use it for semantic checks: unknown enumerators, bad versions.
func (d *Decoder) Fail(field string, at int, err error, format string, args ...any) {
	if d.err == nil {
		d.err = &Error{Field: field, Offset: at, Err: err, Detail: fmt.Sprintf(format, args...)}
	}
}

// Align skips the padding before a value of alignment n (1, 2, 4 or 8).
func (d *Decoder) Align(field string, n int) {
	if d.err != nil {
		return
	}
	pad := Padding(d.pos-d.origin, n)
	if pad > d.end-d.pos {
		d.Fail(field, d.Offset(), ErrTruncated, "%d bytes of alignment padding needed, %d left", pad, d.end-d.pos)
		return
	}
	d.pos += pad
}

// Octets reads n octets with no length and no alignment.
func (d *Decoder) Octets(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.end-d.pos {
		d.Fail(field, d.Offset(), ErrTruncated, "need %d bytes, %d left", n, d.end-d.pos)
		return nil
	}
	b := d.buf[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b
}

func (d *Decoder) aligned(field string, n int) []byte {
	d.Align(field, n)
	return d.Octets(field, n)
}

// Octet reads one octet.
func (d *Decoder) Octet(field string) byte {
	b := d.Octets(field, 1)
	if b == nil {
		return 0
	}
	return b[0]
}

// Boolean reads a boolean; octets other than 0 and 1 are invalid.
func (d *Decoder) Boolean(field string) bool {
	at := d.Offset()
	v := d.Octet(field)
	if v > 1 {
		d.Fail(field, at, ErrInvalid, "boolean octet %d, want 0 or 1", v)
		return false
	}
	return v == 1
}

// UShort reads an unsigned short, aligned on 2.
func (d *Decoder) UShort(field string) uint16 {
	b := d.aligned(field, 2)
	if b == nil {
		return 0
	}
	return d.order.Uint16(b)
}

// Short reads a short, aligned on 2.
func (d *Decoder) Short(field string) int16 { return int16(d.UShort(field)) }

// ULong reads an unsigned long, aligned on 4.
func (d *Decoder) ULong(field string) uint32 {
	b := d.aligned(field, 4)
	if b == nil {
		return 0
	}
	return d.order.Uint32(b)
}

// Long reads a long, aligned on 4.
func (d *Decoder) Long(field string) int32 { return int32(d.ULong(field)) }

// ULongLong reads an unsigned long long, aligned on 8.
func (d *Decoder) ULongLong(field string) uint64 {
	b := d.aligned(field, 8)
	if b == nil {
		return 0
	}
	return d.order.Uint64(b)
}

// LongLong reads a long long, aligned on 8.
func (d *Decoder) LongLong(field string) int64 { return int64(d.ULongLong(field)) }

// Float reads an IEEE single, aligned on 4.
func (d *Decoder) Float(field string) float32 { return math.Float32frombits(d.ULong(field)) }

// Double reads an IEEE double, aligned on 8.
func (d *Decoder) Double(field string) float64 { return math.Float64frombits(d.ULongLong(field)) }

// length reads an unsigned long length and checks that length×unit bytes
// remain after it.
func (d *Decoder) length(field string, unit int) int {
	d.Align(field, 4)
	at := d.Offset()
	n := d.ULong(field)
	if d.err != nil {
		return 0
	}
	left := d.end - d.pos
	if uint64(n)*uint64(unit) > uint64(left) {
		if unit == 1 {
			d.Fail(field, at, ErrLength, "length %d exceeds the %d bytes left", n, left)
		} else {
			d.Fail(field, at, ErrLength, "%d elements of at least %d bytes exceed the %d bytes left", n, unit, left)
		}
		return 0
	}
	return int(n)
}

// SeqLen reads the element count of a sequence whose elements take at least
// minSize bytes each, and fails unless that many bytes remain. Callers then
// allocate at most Remaining()/minSize elements, whatever the input claims.
func (d *Decoder) SeqLen(field string, minSize int) int {
	if minSize < 1 {
		minSize = 1
	}
	return d.length(field, minSize)
}

// OctetSeq reads a sequence<octet>. An empty sequence decodes as nil.
func (d *Decoder) OctetSeq(field string) []byte {
	n := d.length(field, 1)
	if n == 0 {
		return nil
	}
	return d.Octets(field, n)
}

// String reads a string. Its length counts the terminating NUL, which must
// be there, so a length of 0 is invalid: accepting it would let "" decode
// from two encodings of different lengths.
func (d *Decoder) String(field string) string {
	d.Align(field, 4)
	at := d.Offset()
	n := d.length(field, 1)
	if d.err != nil {
		return ""
	}
	if n == 0 {
		d.Fail(field, at, ErrInvalid, "string length 0 (the length must count the terminating NUL)")
		return ""
	}
	b := d.Octets(field, n)
	if b == nil {
		return ""
	}
	if b[n-1] != 0 {
		d.Fail(field, at, ErrInvalid, "string of length %d does not end in NUL", n)
		return ""
	}
	return string(b[:n-1])
}

// Rest returns every byte left in the current scope (nil if none) and
// consumes them.
func (d *Decoder) Rest() []byte {
	if d.err != nil || d.pos == d.end {
		return nil
	}
	b := d.buf[d.pos:d.end:d.end]
	d.pos = d.end
	return b
}

// Done fails with ErrTrailing if bytes are left in the current scope after
// field, the last thing that should be there.
func (d *Decoder) Done(field string) {
	if d.err == nil && d.pos < d.end {
		d.Fail(field, d.Offset(), ErrTrailing, "%d bytes left after %s", d.end-d.pos, field)
	}
}

// Encapsulation reads an encapsulation (CORBA 3.x, GIOP chapter, "CDR
// Transfer Syntax" › "Encapsulation") and calls fn to decode its contents
// on this same decoder, scoped to the encapsulation: the byte order is the
// one its first octet names, alignment is relative to that octet, and reads
// cannot go past its end. fn must consume the contents entirely (calling
// [Decoder.Rest] if it wants to keep unknown trailing bytes); bytes left
// over are an ErrTrailing failure. fn is not called if the encapsulation
// itself is malformed.
func (d *Decoder) Encapsulation(field string, fn func(*Decoder)) {
	d.Align(field, 4)
	at := d.Offset()
	data := d.OctetSeq(field)
	if d.err != nil {
		return
	}
	if len(data) == 0 {
		d.Fail(field, at, ErrInvalid, "empty encapsulation (no byte-order octet)")
		return
	}
	if data[0] > 1 {
		d.Fail(field, at+4, ErrInvalid, "encapsulation byte-order octet %d, want 0 or 1", data[0])
		return
	}
	start, end := d.pos-len(data), d.pos
	outerEnd, outerOrigin, outerOrder := d.end, d.origin, d.order
	d.pos, d.end, d.origin, d.order = start+1, end, start, ByteOrder(data[0])
	fn(d)
	if d.err == nil && d.pos < d.end {
		d.Fail(field, d.Offset(), ErrTrailing, "%d bytes left unread at the end of the encapsulation", d.end-d.pos)
	}
	d.pos, d.end, d.origin, d.order = end, outerEnd, outerOrigin, outerOrder
}
