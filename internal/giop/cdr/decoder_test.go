package cdr

import (
	"errors"
	"strings"
	"testing"
)

// values is one of everything, written by put and read back by get.
type values struct {
	o   byte
	b   bool
	s   int16
	us  uint16
	l   int32
	ul  uint32
	ll  int64
	ull uint64
	f   float32
	d   float64
	str string
	seq []byte
	enc uint16
}

func (v values) put(e *Encoder) {
	e.Octet(v.o)
	e.Boolean(v.b)
	e.Short(v.s)
	e.Octet(0xaa)
	e.UShort(v.us)
	e.Long(v.l)
	e.Octet(0xbb)
	e.ULong(v.ul)
	e.LongLong(v.ll)
	e.Octet(0xcc)
	e.ULongLong(v.ull)
	e.Float(v.f)
	e.Double(v.d)
	e.String(v.str)
	e.OctetSeq(v.seq)
	e.Encapsulation(LittleEndian, func(e *Encoder) { e.Octet(1); e.UShort(v.enc) })
}

func get(d *Decoder) values {
	var v values
	v.o = d.Octet("o")
	v.b = d.Boolean("b")
	v.s = d.Short("s")
	d.Octet("x")
	v.us = d.UShort("us")
	v.l = d.Long("l")
	d.Octet("x")
	v.ul = d.ULong("ul")
	v.ll = d.LongLong("ll")
	d.Octet("x")
	v.ull = d.ULongLong("ull")
	v.f = d.Float("f")
	v.d = d.Double("d")
	v.str = d.String("str")
	v.seq = d.OctetSeq("seq")
	d.Encapsulation("enc", func(d *Decoder) { d.Octet("one"); v.enc = d.UShort("enc") })
	return v
}

func TestRoundTripBothOrdersEveryOffset(t *testing.T) {
	t.Parallel()
	want := values{0xfe, true, -3, 0xbeef, -5, 0xdeadbeef, -7, 1 << 60, 1.5, -2.25, "is_prime", []byte{1, 2, 3}, 0x0102}
	for _, order := range []ByteOrder{BigEndian, LittleEndian} {
		for offset := range 8 {
			var pads [][2]int
			e := NewEncoder(nil, order, offset)
			e.TrackPadding(func(at, n int) { pads = append(pads, [2]int{at, n}) })
			want.put(e)
			b := e.Bytes()
			// Other ORBs leave garbage in padding: decoding must not care.
			for _, p := range pads {
				for i := p[0]; i < p[0]+p[1]; i++ {
					b[i] = 0x5a
				}
			}
			d := NewDecoder(b, order, offset)
			got := get(d)
			d.Done("values")
			if err := d.Err(); err != nil {
				t.Fatalf("%v offset %d: %v", order, offset, err)
			}
			if got.str != want.str || string(got.seq) != string(want.seq) || got.o != want.o || got.b != want.b ||
				got.s != want.s || got.us != want.us || got.l != want.l || got.ul != want.ul || got.ll != want.ll ||
				got.ull != want.ull || got.f != want.f || got.d != want.d || got.enc != want.enc {
				t.Fatalf("%v offset %d: got %+v, want %+v", order, offset, got, want)
			}
		}
	}
}

func TestDecoderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []byte
		offset  int
		read    func(d *Decoder)
		want    error
		wantMsg string
	}{
		{"empty", nil, 0, func(d *Decoder) { d.Octet("flags") }, ErrTruncated,
			"cdr: flags at offset 0: need 1 bytes, 0 left"},
		{"short long", []byte{1, 2}, 0, func(d *Decoder) { d.ULong("request_id") }, ErrTruncated,
			"cdr: request_id at offset 0: need 4 bytes, 2 left"},
		{"padding past the end", []byte{1, 2}, 0, func(d *Decoder) { d.Octet("a"); d.ULong("b") }, ErrTruncated,
			"cdr: b at offset 1: 3 bytes of alignment padding needed, 1 left"},
		{"offsets count from the given base", []byte{0, 0, 0, 9, 1}, 20, func(d *Decoder) { d.OctetSeq("object_key") }, ErrLength,
			"cdr: object_key at offset 20: length 9 exceeds the 1 bytes left"},
		{"huge sequence", []byte{0xff, 0xff, 0xff, 0xff}, 0, func(d *Decoder) { d.OctetSeq("object_key") }, ErrLength,
			"cdr: object_key at offset 0: length 4294967295 exceeds the 0 bytes left"},
		{"huge element count", []byte{0, 0, 1, 0, 0, 0, 0, 0}, 0, func(d *Decoder) { d.SeqLen("service_context", 8) }, ErrLength,
			"cdr: service_context at offset 0: 256 elements of at least 8 bytes exceed the 4 bytes left"},
		{"boolean 2", []byte{2}, 0, func(d *Decoder) { d.Boolean("response_expected") }, ErrInvalid,
			"cdr: response_expected at offset 0: boolean octet 2, want 0 or 1"},
		{"string without NUL", []byte{0, 0, 0, 2, 'a', 'b'}, 0, func(d *Decoder) { d.String("operation") }, ErrInvalid,
			"cdr: operation at offset 0: string of length 2 does not end in NUL"},
		{"string of length 0", []byte{0, 0, 0, 0}, 0, func(d *Decoder) { d.String("type_id") }, ErrInvalid,
			"cdr: type_id at offset 0: string length 0 (the length must count the terminating NUL)"},
		{"empty encapsulation", []byte{0, 0, 0, 0}, 0, func(d *Decoder) { d.Encapsulation("profile_data", func(*Decoder) {}) }, ErrInvalid,
			"cdr: profile_data at offset 0: empty encapsulation (no byte-order octet)"},
		{"bad byte order", []byte{0, 0, 0, 1, 7}, 0, func(d *Decoder) { d.Encapsulation("profile_data", func(*Decoder) {}) }, ErrInvalid,
			"cdr: profile_data at offset 4: encapsulation byte-order octet 7, want 0 or 1"},
		{"encapsulation left unread", []byte{0, 0, 0, 3, 0, 1, 2}, 0, func(d *Decoder) { d.Encapsulation("component_data", func(d *Decoder) { d.Octet("x") }) }, ErrTrailing,
			"cdr: component_data at offset 6: 1 bytes left unread at the end of the encapsulation"},
		{"read past the encapsulation", []byte{0, 0, 0, 2, 0, 1, 2, 3, 4, 5}, 0, func(d *Decoder) { d.Encapsulation("component_data", func(d *Decoder) { d.ULong("x") }) }, ErrTruncated,
			"cdr: x at offset 5: 3 bytes of alignment padding needed, 1 left"},
		{"done", []byte{1, 2}, 0, func(d *Decoder) { d.Octet("a"); d.Done("a") }, ErrTrailing,
			"cdr: a at offset 1: 1 bytes left after a"},
		{"first failure wins", []byte{5}, 0, func(d *Decoder) { d.Boolean("first"); d.ULong("second") }, ErrInvalid,
			"cdr: first at offset 0: boolean octet 5, want 0 or 1"},
		{"fail", []byte{0, 0, 0, 9}, 12, func(d *Decoder) {
			at := d.Offset()
			if v := d.ULong("reply_status"); v > 5 {
				d.Fail("reply_status", at, ErrInvalid, "unknown reply status %d", v)
			}
		}, ErrInvalid, "cdr: reply_status at offset 12: unknown reply status 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := NewDecoder(tt.in, BigEndian, tt.offset)
			tt.read(d)
			err := d.Err()
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not *Error", err)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message\n%q, want\n%q", err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestDecoderSlicesAliasWithCappedCapacity(t *testing.T) {
	t.Parallel()
	in := []byte{0, 0, 0, 2, 'a', 'b', 'c', 'd'}
	d := NewDecoder(in, BigEndian, 0)
	key := d.OctetSeq("object_key")
	if cap(key) != 2 {
		t.Fatalf("cap %d, want 2 so appends cannot clobber the input", cap(key))
	}
	_ = append(key, 'X')
	if in[6] != 'c' {
		t.Fatal("append through a decoded slice overwrote the input")
	}
	if rest := d.Rest(); string(rest) != "cd" || cap(rest) != 2 {
		t.Fatalf("Rest %q cap %d", rest, cap(rest))
	}
	if d.Rest() != nil {
		t.Fatal("second Rest not nil")
	}
}

func TestDecoderEmptySequenceIsNil(t *testing.T) {
	t.Parallel()
	d := NewDecoder([]byte{0, 0, 0, 0}, LittleEndian, 0)
	if b := d.OctetSeq("principal"); b != nil {
		t.Fatalf("got %#v, want nil", b)
	}
}

func TestNegativeOffsetPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"encoder": func() { NewEncoder(nil, BigEndian, -1) },
		"decoder": func() { NewDecoder(nil, BigEndian, -1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "negative offset") {
					t.Errorf("%s: recovered %v", name, r)
				}
			}()
			f()
		}()
	}
}
