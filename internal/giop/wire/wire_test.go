package wire_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

func request(t testing.TB, id uint32, order cdr.ByteOrder, body int) []byte {
	t.Helper()
	r := &giop.Request{Envelope: giop.Envelope{Version: giop.V12, Order: order}, RequestID: id, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte("Prime")), Operation: "echo"}
	r.SetBody(func(e *cdr.Encoder) { e.OctetSeq(bytes.Repeat([]byte{byte(id)}, body)) })
	b, err := giop.EncodeMessage(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// split cuts a GIOP 1.2 message into a first piece of cut bytes (8-aligned)
// and Fragments of at most step bytes of data.
func split(t testing.TB, whole []byte, id uint32, order cdr.ByteOrder, cut, step int) [][]byte {
	t.Helper()
	first := bytes.Clone(whole[:cut])
	first[6] |= 0x02
	order.PutUint32(first[8:], uint32(cut-giop.HeaderSize))
	out := [][]byte{first}
	for rest := whole[cut:]; len(rest) > 0; {
		n := min(step, len(rest))
		f := &giop.Fragment{Envelope: giop.Envelope{Version: giop.V12, Order: order, MoreFragments: n < len(rest)}, RequestID: id, Body: rest[:n]}
		b, err := giop.EncodeMessage(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		rest = rest[n:]
	}
	return out
}

// Interleaved GIOP 1.2 fragments of two requests come out as the two
// whole messages, as they were before being cut.
func TestReaderJoinsFragments(t *testing.T) {
	t.Parallel()
	for _, order := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
		a, b := request(t, 1, order, 100), request(t, 2, order, 60)
		pa, pb := split(t, a, 1, order, 48, 24), split(t, b, 2, order, 40, 16)
		var stream bytes.Buffer
		for i := range max(len(pa), len(pb)) {
			if i < len(pa) {
				stream.Write(pa[i])
			}
			if i < len(pb) {
				stream.Write(pb[i])
			}
		}
		r := wire.NewReader(&stream, giop.Limits{})
		var got [][]byte
		for {
			m, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		if len(got) != 2 || !bytes.Equal(got[0], b) && !bytes.Equal(got[1], b) || !bytes.Equal(got[0], a) && !bytes.Equal(got[1], a) {
			t.Fatalf("%v: joined %d messages that are not the originals", order, len(got))
		}
		for _, m := range got {
			if _, err := giop.DecodeMessage(m); err != nil {
				t.Errorf("joined message does not decode: %v", err)
			}
		}
	}
}

func TestReaderFragmentMisuse(t *testing.T) {
	t.Parallel()
	whole := request(t, 3, cdr.BigEndian, 200)
	pieces := split(t, whole, 3, cdr.BigEndian, 64, 64)
	stray, _ := giop.EncodeMessage(&giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 9, Body: []byte{0, 0, 0, 0}})
	old, _ := giop.EncodeMessage(&giop.Fragment{Envelope: giop.Envelope{Version: giop.V11}, Body: []byte{1}})
	many := func() []byte {
		var b bytes.Buffer
		for id := range uint32(wire.MaxPending + 1) {
			b.Write(split(t, request(t, id, cdr.BigEndian, 40), id, cdr.BigEndian, 40, 64)[0])
		}
		return b.Bytes()
	}()
	cases := []struct {
		name   string
		stream []byte
		limit  int
		want   error
	}{
		{"fragment with no message", stray, 0, wire.ErrFragment},
		{"GIOP 1.1 fragment", old, 0, wire.ErrFragment},
		{"request started twice", append(bytes.Clone(pieces[0]), pieces[0]...), 0, wire.ErrFragment},
		{"too many in pieces", many, 0, wire.ErrFragment},
		{"joined beyond the limit", bytes.Join(pieces, nil), 128, giop.ErrTooLarge},
		{"cut inside a message", whole[:len(whole)-1], 0, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		r := wire.NewReader(bytes.NewReader(c.stream), giop.Limits{MaxMessageSize: c.limit})
		var err error
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want != io.ErrUnexpectedEOF && !wire.IsProtocolError(err) {
			t.Errorf("%s: %v is not a protocol error", c.name, err)
		}
	}
}

// Any bytes: Next never panics, returns whole messages whose size fits the
// limit, and ends with an error.
func FuzzReader(f *testing.F) {
	req := request(f, 1, cdr.LittleEndian, 30)
	f.Add(req)
	f.Add(bytes.Join(split(f, req, 1, cdr.LittleEndian, 40, 8), nil))
	f.Add([]byte("GIOP\x01\x02\x02\x07\x00\x00\x00\x04\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := wire.NewReader(bytes.NewReader(b), giop.Limits{MaxMessageSize: 4096})
		for range len(b) + 1 {
			m, err := r.Next()
			if err != nil {
				return
			}
			if len(m) < giop.HeaderSize || len(m)-giop.HeaderSize > 4096 {
				t.Fatalf("message of %d bytes", len(m))
			}
			if _, err := giop.ParseHeader(m); err != nil {
				t.Fatalf("returned message has a bad header: %v", err)
			}
		}
		t.Fatalf("no error after %d messages of %d input bytes", len(b)+1, len(b))
	})
}
