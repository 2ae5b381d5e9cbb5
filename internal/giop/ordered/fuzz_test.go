package ordered_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
)

// FuzzDecodeFTRequest checks that any context data either decodes to a
// request that re-encodes to the same data (in its byte order, padding
// aside) or fails with ErrMalformed, without panicking.
func FuzzDecodeFTRequest(f *testing.F) {
	f.Add(ordered.FTRequest{ClientID: "client", RetentionID: 7, ExpirationTime: 99}.Encode(cdr.BigEndian))
	f.Add(ordered.FTRequest{ClientID: "c", RetentionID: -1}.Encode(cdr.LittleEndian))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ordered.DecodeFTRequest(data)
		if err != nil {
			if !errors.Is(err, ordered.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := ordered.DecodeFTRequest(r.Encode(cdr.ByteOrder(data[0])))
		if err != nil || again != r {
			t.Fatalf("re-encoded %+v decodes as %+v, %v", r, again, err)
		}
	})
}

// FuzzDecodeTimeSeed does the same for the time/seed context.
func FuzzDecodeTimeSeed(f *testing.F) {
	f.Add(ordered.TimeSeed{Time: time.Unix(1, 2), Seed: 3}.Encode(cdr.BigEndian))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ordered.DecodeTimeSeed(data)
		if err != nil {
			if !errors.Is(err, ordered.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := ordered.DecodeTimeSeed(s.Encode(cdr.ByteOrder(data[0])))
		if err != nil || !again.Time.Equal(s.Time) || again.Seed != s.Seed {
			t.Fatalf("re-encoded %+v decodes as %+v, %v", s, again, err)
		}
	})
}
