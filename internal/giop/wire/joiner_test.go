package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

func header(t testing.TB, raw []byte) giop.Header {
	t.Helper()
	h, err := giop.ParseHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func encode(t testing.TB, m giop.Message) []byte {
	t.Helper()
	b, err := giop.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// split11 cuts a GIOP 1.1 message into a first piece of cut bytes and one
// Fragment with the rest.
func split11(t testing.TB, whole []byte, cut int) [][]byte {
	t.Helper()
	first := bytes.Clone(whole[:cut])
	first[6] |= 0x02
	cdr.BigEndian.PutUint32(first[8:], uint32(cut-giop.HeaderSize))
	frag := encode(t, &giop.Fragment{Envelope: giop.Envelope{Version: giop.V11}, Body: whole[cut:]})
	return [][]byte{first, frag}
}

func request11(t testing.TB, body int) []byte {
	t.Helper()
	r := &giop.Request{Envelope: giop.Envelope{Version: giop.V11}, RequestID: 5, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte("Prime")), Operation: "echo"}
	r.SetBody(func(e *cdr.Encoder) { e.OctetSeq(bytes.Repeat([]byte{7}, body)) })
	return encode(t, r)
}

// feed adds pieces in turn and returns the last result.
func feed(t testing.TB, j *wire.Joiner, max int, pieces ...[]byte) ([]byte, bool, error) {
	t.Helper()
	var (
		msg        []byte
		misaligned bool
		err        error
	)
	for i, p := range pieces {
		msg, misaligned, err = j.Add(header(t, p), p, max)
		if err != nil || i < len(pieces)-1 && msg != nil {
			return msg, misaligned, err
		}
	}
	return msg, misaligned, err
}

// GIOP 1.1 fragments join into the original message; a join that does not
// keep the body's alignment (the bytes before it not 4 modulo 8) is
// reported misaligned.
func TestJoinerV11(t *testing.T) {
	t.Parallel()
	whole := request11(t, 200)
	for _, c := range []struct {
		cut        int
		misaligned bool
	}{{52, false}, {60, false}, {56, true}, {50, true}} {
		j := wire.NewJoiner(wire.JoinerOptions{V11: true})
		msg, misaligned, err := feed(t, j, 1<<20, split11(t, whole, c.cut)...)
		if err != nil || !bytes.Equal(msg, whole) {
			t.Fatalf("cut at %d: joined %d bytes, %v; want the original %d", c.cut, len(msg), err, len(whole))
		}
		if misaligned != c.misaligned {
			t.Errorf("cut at %d: misaligned %v, want %v", c.cut, misaligned, c.misaligned)
		}
	}
}

// Fragment misuse and sizes beyond the limit are errors; CancelRequest ends
// a message in pieces; every byte held goes back to the Budget.
func TestJoinerMisuse(t *testing.T) {
	t.Parallel()
	whole11 := request11(t, 200)
	p11 := split11(t, whole11, 52)
	whole12 := request(t, 3, cdr.BigEndian, 200)
	p12 := split(t, whole12, 3, cdr.BigEndian, 64, 64)
	cancel := func(v giop.Version, id uint32) []byte {
		return encode(t, &giop.CancelRequest{Envelope: giop.Envelope{Version: v}, RequestID: id})
	}
	opening := func(n int) [][]byte {
		var out [][]byte
		for id := range uint32(n) {
			out = append(out, split(t, request(t, id, cdr.BigEndian, 40), id, cdr.BigEndian, 40, 64)[0])
		}
		return out
	}
	cases := []struct {
		name   string
		opts   wire.JoinerOptions
		max    int
		pieces [][]byte
		want   error
	}{
		{"fragment of nothing", wire.JoinerOptions{V11: true}, 1 << 20, p12[1:2], wire.ErrFragment},
		{"GIOP 1.1 fragment of nothing", wire.JoinerOptions{V11: true}, 1 << 20, p11[1:], wire.ErrFragment},
		{"GIOP 1.1 not joined", wire.JoinerOptions{}, 1 << 20, p11[:1], wire.ErrFragment},
		{"GIOP 1.1 interrupted", wire.JoinerOptions{V11: true}, 1 << 20, [][]byte{p11[0], request11(t, 10)}, wire.ErrFragment},
		{"GIOP 1.2 fragment inside 1.1", wire.JoinerOptions{V11: true}, 1 << 20, [][]byte{p11[0], p12[1]}, wire.ErrFragment},
		{"cancelled GIOP 1.1", wire.JoinerOptions{V11: true}, 1 << 20, [][]byte{p11[0], cancel(giop.V11, 5), p11[1]}, wire.ErrFragment},
		{"cancelled GIOP 1.2", wire.JoinerOptions{}, 1 << 20, [][]byte{p12[0], cancel(giop.V12, 3), p12[1]}, wire.ErrFragment},
		{"started twice", wire.JoinerOptions{}, 1 << 20, [][]byte{p12[0], p12[0]}, wire.ErrFragment},
		{"too many open", wire.JoinerOptions{MaxOpen: 3}, 1 << 20, opening(4), wire.ErrFragment},
		{"joined beyond the limit", wire.JoinerOptions{}, 128, p12, giop.ErrTooLarge},
		{"held beyond the limit", wire.JoinerOptions{}, 100, opening(3), giop.ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := wire.NewBudget(1 << 20)
			c.opts.Budget = b
			j := wire.NewJoiner(c.opts)
			var err error
			for _, p := range c.pieces {
				var msg []byte
				msg, _, err = j.Add(header(t, p), p, c.max)
				if err != nil {
					break
				}
				if h := header(t, p); msg != nil && h.Type == giop.MsgCancelRequest {
					j.Cancel(cdr.BigEndian.Uint32(p[giop.HeaderSize:]))
				}
			}
			if !errors.Is(err, c.want) || !wire.IsProtocolError(err) {
				t.Fatalf("%v, want a protocol error wrapping %v", err, c.want)
			}
			j.Close()
			if st, _ := b.Stats(); st.Held != 0 {
				t.Errorf("%d bytes still held after Close", st.Held)
			}
		})
	}
}

// The Budget is charged with the pieces held and given them back when the
// message is whole.
func TestJoinerChargesTheBudget(t *testing.T) {
	t.Parallel()
	whole := request(t, 9, cdr.LittleEndian, 300)
	pieces := split(t, whole, 9, cdr.LittleEndian, 96, 64)
	b := wire.NewBudget(1 << 20)
	j := wire.NewJoiner(wire.JoinerOptions{Budget: b})
	held := 0
	for i, p := range pieces {
		msg, _, err := j.Add(header(t, p), p, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := b.Stats()
		if i < len(pieces)-1 {
			if i == 0 {
				held += len(p)
			} else {
				held += len(p) - 16
			}
			if msg != nil || st.Held != held {
				t.Fatalf("piece %d: held %d, want %d", i, st.Held, held)
			}
			continue
		}
		if !bytes.Equal(msg, whole) || st.Held != 0 {
			t.Fatalf("last piece: joined %d bytes with %d held, want the original and 0", len(msg), st.Held)
		}
	}
}
