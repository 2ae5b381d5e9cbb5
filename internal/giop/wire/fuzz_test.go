package wire_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// Any bytes through a Framer and a Joiner of GIOP 1.1 and 1.2 fragments
// sharing a small Budget (the front door's reading): no panic, whole
// messages within the limit with no more-fragments flag, an error at the
// end, and every byte given back to the Budget after Close.
func FuzzFramerJoiner(f *testing.F) {
	req := request(f, 1, cdr.LittleEndian, 30)
	f.Add(req)
	f.Add(bytes.Join(split(f, req, 1, cdr.LittleEndian, 40, 8), nil))
	f.Add(bytes.Join(split11(f, request11(f, 100), 52), nil))
	f.Add([]byte("GIOP\x01\x02\x00\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 4096
		budget := wire.NewBudget(1024)
		fr := wire.NewFramer(bytes.NewReader(b), wire.FramerOptions{Limits: giop.Limits{MaxMessageSize: limit}, Budget: budget})
		j := wire.NewJoiner(wire.JoinerOptions{V11: true, Budget: budget})
		defer func() {
			j.Close()
			if st, _ := budget.Stats(); st.Held != 0 || st.Waiting != 0 {
				t.Fatalf("budget after Close: %+v", st)
			}
		}()
		for range len(b) + 1 {
			h, raw, err := fr.Read(nil, time.Time{})
			if err != nil {
				return
			}
			m, _, err := j.Add(h, raw, limit)
			if err != nil {
				return
			}
			if m == nil {
				continue
			}
			wh, err := giop.ParseHeader(m)
			if err != nil || wh.MoreFragments || wh.Type == giop.MsgFragment || len(m)-giop.HeaderSize > limit || int(wh.Size) != len(m)-giop.HeaderSize {
				t.Fatalf("returned message: header %+v, %v; %d bytes", wh, err, len(m))
			}
		}
		t.Fatalf("no error after %d messages of %d input bytes", len(b)+1, len(b))
	})
}
