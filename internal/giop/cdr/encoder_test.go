package cdr

import (
	"bytes"
	"testing"
)

func TestEncoderAlignment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		offset int // alignment position of the first byte written
		write  func(e *Encoder)
		big    []byte
		little []byte
	}{
		{"octet never pads", 3, func(e *Encoder) { e.Octet(0xab) }, []byte{0xab}, []byte{0xab}},
		{"boolean never pads", 5, func(e *Encoder) { e.Boolean(true); e.Boolean(false) }, []byte{1, 0}, []byte{1, 0}},
		{"short at 0", 0, func(e *Encoder) { e.Short(-2) }, []byte{0xff, 0xfe}, []byte{0xfe, 0xff}},
		{"short at 1", 1, func(e *Encoder) { e.UShort(0x0102) }, []byte{0, 1, 2}, []byte{0, 2, 1}},
		{"long at 1", 1, func(e *Encoder) { e.ULong(0x01020304) }, []byte{0, 0, 0, 1, 2, 3, 4}, []byte{0, 0, 0, 4, 3, 2, 1}},
		{"long at 4", 4, func(e *Encoder) { e.Long(-1) }, []byte{0xff, 0xff, 0xff, 0xff}, []byte{0xff, 0xff, 0xff, 0xff}},
		{"long at 6", 6, func(e *Encoder) { e.ULong(7) }, []byte{0, 0, 0, 0, 0, 7}, []byte{0, 0, 7, 0, 0, 0}},
		{"long long at 4", 4, func(e *Encoder) { e.ULongLong(0x0102030405060708) },
			[]byte{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, []byte{0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}},
		{"long long at 12 of a message", 12, func(e *Encoder) { e.LongLong(1) },
			[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}},
		{"double at 3", 3, func(e *Encoder) { e.Double(1) },
			[]byte{0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{"float at 2", 2, func(e *Encoder) { e.Float(1) }, []byte{0, 0, 0x3f, 0x80, 0, 0}, []byte{0, 0, 0, 0, 0x80, 0x3f}},
		{"octet then short then long", 0, func(e *Encoder) { e.Octet(9); e.UShort(1); e.ULong(2) },
			[]byte{9, 0, 0, 1, 0, 0, 0, 2}, []byte{9, 0, 1, 0, 2, 0, 0, 0}},
		{"string", 1, func(e *Encoder) { e.String("ab") }, []byte{0, 0, 0, 0, 0, 0, 3, 'a', 'b', 0}, []byte{0, 0, 0, 3, 0, 0, 0, 'a', 'b', 0}},
		{"empty string", 0, func(e *Encoder) { e.String("") }, []byte{0, 0, 0, 1, 0}, []byte{1, 0, 0, 0, 0}},
		{"octet sequence", 2, func(e *Encoder) { e.OctetSeq([]byte{7, 8}) }, []byte{0, 0, 0, 0, 0, 2, 7, 8}, []byte{0, 0, 2, 0, 0, 0, 7, 8}},
		{"raw is never padded", 1, func(e *Encoder) { e.Raw([]byte{1, 2, 3}) }, []byte{1, 2, 3}, []byte{1, 2, 3}},
		{
			// The encapsulation starts at its byte-order octet (position 4 here),
			// so the inner long, at inner position 1, pads to inner position 4.
			// Its contents are in the encapsulation's byte order, not the outer one.
			"encapsulation aligns from its byte-order octet", 0,
			func(e *Encoder) { e.Encapsulation(BigEndian, func(e *Encoder) { e.ULong(5) }) },
			[]byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 5},
			[]byte{8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, // contents stay big-endian
		},
		{
			"encapsulation in the other byte order", 0,
			func(e *Encoder) { e.Encapsulation(LittleEndian, func(e *Encoder) { e.UShort(0x0102) }) },
			[]byte{0, 0, 0, 4, 1, 0, 2, 1},
			[]byte{4, 0, 0, 0, 1, 0, 2, 1},
		},
		{
			// Inside an encapsulation whose byte-order octet is at message position
			// 4, a long long pads to inner position 8, message position 12, which
			// is not 8-aligned in message terms: alignment is the encapsulation's.
			"long long in an encapsulation", 0,
			func(e *Encoder) { e.Encapsulation(BigEndian, func(e *Encoder) { e.ULongLong(1) }) },
			[]byte{0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			[]byte{16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		},
		{
			"nested encapsulations", 3,
			func(e *Encoder) {
				e.Encapsulation(LittleEndian, func(e *Encoder) {
					e.Octet(0xaa)
					e.Encapsulation(BigEndian, func(e *Encoder) { e.UShort(0x0102) })
				})
			},
			// pad 1, outer len 16, [01 aa pad2 inner-len 4 LE, 00 pad 01 02]
			[]byte{0, 0, 0, 0, 12, 1, 0xaa, 0, 0, 4, 0, 0, 0, 0, 0, 1, 2},
			[]byte{0, 12, 0, 0, 0, 1, 0xaa, 0, 0, 4, 0, 0, 0, 0, 0, 1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				order ByteOrder
				want  []byte
			}{{BigEndian, tt.big}, {LittleEndian, tt.little}} {
				e := NewEncoder(nil, c.order, tt.offset)
				tt.write(e)
				if !bytes.Equal(e.Bytes(), c.want) {
					t.Errorf("%v: got  % x\nwant % x", c.order, e.Bytes(), c.want)
				}
			}
		})
	}
}

func TestEncoderAppendsToDst(t *testing.T) {
	t.Parallel()
	// The alignment origin is given by offset, not by len(dst).
	e := NewEncoder([]byte{0xee, 0xee, 0xee}, BigEndian, 0)
	e.ULong(1)
	if want := []byte{0xee, 0xee, 0xee, 0, 0, 0, 1}; !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("got % x, want % x", e.Bytes(), want)
	}
	if e.Offset() != 4 || e.Len() != 7 {
		t.Fatalf("Offset %d Len %d, want 4 and 7", e.Offset(), e.Len())
	}
}

func TestEncoderTrackPadding(t *testing.T) {
	t.Parallel()
	type run struct{ at, n int }
	var got []run
	e := NewEncoder([]byte{0xee}, LittleEndian, 1) // dst byte sits at position 0
	e.TrackPadding(func(at, n int) { got = append(got, run{at, n}) })
	e.Octet(1)                                    // index 1, position 1
	e.ULong(2)                                    // pad at 2..4
	e.Octet(3)                                    // index 8
	e.Encapsulation(BigEndian, func(e *Encoder) { // pad 9..12, len 12..16, order 16
		e.UShort(4) // pad 17
	})
	want := []run{{2, 2}, {9, 3}, {17, 1}}
	if len(got) != len(want) {
		t.Fatalf("padding runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("padding runs %v, want %v", got, want)
		}
	}
	for _, r := range got {
		for i := r.at; i < r.at+r.n; i++ {
			if e.Bytes()[i] != 0 {
				t.Errorf("padding byte %d is %#x, want 0", i, e.Bytes()[i])
			}
		}
	}
}

func TestPadding(t *testing.T) {
	t.Parallel()
	tests := []struct{ offset, align, want int }{
		{0, 8, 0}, {1, 8, 7}, {12, 8, 4}, {13, 4, 3}, {5, 2, 1}, {7, 1, 0},
	}
	for _, tt := range tests {
		if got := Padding(tt.offset, tt.align); got != tt.want {
			t.Errorf("Padding(%d, %d) = %d, want %d", tt.offset, tt.align, got, tt.want)
		}
	}
}
