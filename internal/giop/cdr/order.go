package cdr

import "encoding/binary"

// ByteOrder is the byte order of a CDR stream. Its values are those of the
// GIOP header's byte-order flag bit and of an encapsulation's first octet
// (CORBA 3.x, GIOP chapter, "CDR Transfer Syntax" › "Encapsulation").
type ByteOrder uint8

const (
	// BigEndian is byte order 0: most significant byte first.
	BigEndian ByteOrder = 0
	// LittleEndian is byte order 1: least significant byte first.
	LittleEndian ByteOrder = 1
)

// String returns "big-endian" or "little-endian".
func (o ByteOrder) String() string {
	if o == LittleEndian {
		return "little-endian"
	}
	return "big-endian"
}

// Uint16 reads b[0:2] in order o.
func (o ByteOrder) Uint16(b []byte) uint16 {
	if o == LittleEndian {
		return binary.LittleEndian.Uint16(b)
	}
	return binary.BigEndian.Uint16(b)
}

// Uint32 reads b[0:4] in order o.
func (o ByteOrder) Uint32(b []byte) uint32 {
	if o == LittleEndian {
		return binary.LittleEndian.Uint32(b)
	}
	return binary.BigEndian.Uint32(b)
}

// Uint64 reads b[0:8] in order o.
func (o ByteOrder) Uint64(b []byte) uint64 {
	if o == LittleEndian {
		return binary.LittleEndian.Uint64(b)
	}
	return binary.BigEndian.Uint64(b)
}

// PutUint32 writes v to b[0:4] in order o.
func (o ByteOrder) PutUint32(b []byte, v uint32) {
	if o == LittleEndian {
		binary.LittleEndian.PutUint32(b, v)
		return
	}
	binary.BigEndian.PutUint32(b, v)
}

func (o ByteOrder) appendUint16(b []byte, v uint16) []byte {
	if o == LittleEndian {
		return binary.LittleEndian.AppendUint16(b, v)
	}
	return binary.BigEndian.AppendUint16(b, v)
}

func (o ByteOrder) appendUint32(b []byte, v uint32) []byte {
	if o == LittleEndian {
		return binary.LittleEndian.AppendUint32(b, v)
	}
	return binary.BigEndian.AppendUint32(b, v)
}

func (o ByteOrder) appendUint64(b []byte, v uint64) []byte {
	if o == LittleEndian {
		return binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.BigEndian.AppendUint64(b, v)
}

// Padding returns how many octets of padding precede a value of the given
// alignment (1, 2, 4 or 8) at alignment position offset.
func Padding(offset, alignment int) int {
	return (alignment - offset%alignment) % alignment
}
