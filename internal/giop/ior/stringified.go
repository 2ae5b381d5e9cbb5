package ior

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

const iorPrefix = "IOR:"

// ParseStringified parses a stringified IOR: "IOR:" followed by the hex
// digits, in either case, of an encapsulation holding the IOR (CORBA 3.x,
// ORB Interoperability Architecture chapter, "Stringified Object
// References"). The prefix is matched without regard to case and
// surrounding white space is ignored. Error offsets count decoded bytes
// from the byte-order octet (hex digit 4+2×offset of the string).
func ParseStringified(s string) (IOR, error) {
	s = strings.TrimSpace(s)
	if len(s) < len(iorPrefix) || !strings.EqualFold(s[:len(iorPrefix)], iorPrefix) {
		return IOR{}, fmt.Errorf("ior: stringified reference must start with %q", iorPrefix)
	}
	digits := s[len(iorPrefix):]
	if len(digits)%2 != 0 {
		return IOR{}, fmt.Errorf("ior: stringified IOR has an odd number (%d) of hex digits", len(digits))
	}
	b := make([]byte, len(digits)/2)
	if _, err := hex.Decode(b, []byte(digits)); err != nil {
		return IOR{}, fmt.Errorf("ior: stringified IOR: %w", err)
	}
	if len(b) == 0 {
		return IOR{}, fmt.Errorf("ior: stringified IOR is empty (no byte-order octet)")
	}
	if b[0] > 1 {
		return IOR{}, fmt.Errorf("ior: stringified IOR: byte-order octet %d, want 0 or 1", b[0])
	}
	d := cdr.NewDecoder(b, cdr.ByteOrder(b[0]), 0)
	d.Octet("byte_order")
	v := Decode(d)
	d.Done("ior")
	if err := d.Err(); err != nil {
		return IOR{}, fmt.Errorf("ior: stringified IOR: %w", err)
	}
	return v, nil
}

// String returns v stringified with a big-endian encapsulation.
func (v IOR) String() string { return v.Stringify(cdr.BigEndian) }

// Stringify returns v as "IOR:" and lower-case hex digits of an
// encapsulation in the given byte order.
func (v IOR) Stringify(order cdr.ByteOrder) string {
	e := cdr.NewEncoder(make([]byte, 0, 256), order, 0)
	e.Octet(byte(order))
	v.Encode(e)
	b := e.Bytes()
	out := make([]byte, len(iorPrefix)+hex.EncodedLen(len(b)))
	copy(out, iorPrefix)
	hex.Encode(out[len(iorPrefix):], b)
	return string(out)
}
