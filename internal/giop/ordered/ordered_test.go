package ordered_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
)

func TestFTRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
		want := ordered.FTRequest{ClientID: "omniORB-client-ü", RetentionID: -7, ExpirationTime: 1 << 60}
		got, err := ordered.DecodeFTRequest(want.Encode(o))
		if err != nil {
			t.Fatalf("%v: %v", o, err)
		}
		if got != want {
			t.Fatalf("%v: got %+v, want %+v", o, got, want)
		}
		if got.Seq() != uint64(uint32(0xfffffff9)) {
			t.Fatalf("Seq() = %d, want %d", got.Seq(), uint32(0xfffffff9))
		}
	}
}

func TestDecodeFTRequestRefuses(t *testing.T) {
	t.Parallel()
	valid := ordered.FTRequest{ClientID: "c", RetentionID: 1}.Encode(cdr.BigEndian)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty context data"},
		{"bad byte order", []byte{2, 0, 0, 0}, "byte-order octet 2 at offset 0"},
		{"truncated", valid[:len(valid)-3], "expiration_time"},
		{"trailing bytes", append(append([]byte{}, valid...), 0), "left after expiration_time"},
		{"empty client id", ordered.FTRequest{}.Encode(cdr.LittleEndian), "client_id at offset 4: empty"},
		{"long client id", ordered.FTRequest{ClientID: strings.Repeat("x", 129)}.Encode(cdr.BigEndian), "129 characters, want at most 128"},
		{"not utf-8", ordered.FTRequest{ClientID: "\xff"}.Encode(cdr.BigEndian), "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ordered.DecodeFTRequest(tt.data)
			if !errors.Is(err, ordered.ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrMalformed containing %q", err, tt.want)
			}
		})
	}
}

func TestTimeSeedRoundTrip(t *testing.T) {
	t.Parallel()
	want := ordered.TimeSeed{Time: time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC), Seed: 1<<64 - 1}
	for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
		got, err := ordered.DecodeTimeSeed(want.Encode(o))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Time.Equal(want.Time) || got.Time.Location() != time.UTC || got.Seed != want.Seed {
			t.Fatalf("%v: got %+v, want %+v", o, got, want)
		}
	}
	big := cdr.NewEncoder(nil, cdr.BigEndian, 0)
	big.Octet(0)
	big.ULongLong(1 << 63)
	big.ULongLong(0)
	if _, err := ordered.DecodeTimeSeed(big.Bytes()); !errors.Is(err, ordered.ErrMalformed) || !strings.Contains(err.Error(), "year 2262") {
		t.Fatalf("nanoseconds 2^63: err = %v", err)
	}
}

func TestSetTimeSeedReplaces(t *testing.T) {
	t.Parallel()
	req := &giop.Request{ServiceContexts: []giop.ServiceContext{
		{ID: ordered.ServiceTimeSeed, Data: []byte{9}}, {ID: 1, Data: []byte{0}},
	}}
	ordered.SetTimeSeed(req, ordered.TimeSeed{Time: time.Unix(5, 0), Seed: 6})
	if len(req.ServiceContexts) != 2 || req.ServiceContexts[0].ID != 1 || req.ServiceContexts[1].ID != ordered.ServiceTimeSeed {
		t.Fatalf("contexts = %+v", req.ServiceContexts)
	}
	ts, err := ordered.DecodeTimeSeed(req.ServiceContexts[1].Data)
	if err != nil || ts.Seed != 6 || !ts.Time.Equal(time.Unix(5, 0)) {
		t.Fatalf("got %+v, %v", ts, err)
	}
}

// TestEncodeKeepsBodyAlignment changes the header of GIOP 1.0 and 1.1
// requests by every length mod 8 and checks that the body decodes as
// written, with the principal padded.
func TestEncodeKeepsBodyAlignment(t *testing.T) {
	t.Parallel()
	for _, v := range []giop.Version{giop.V10, giop.V11, giop.V12} {
		for extra := range 8 {
			req := &giop.Request{Envelope: giop.Envelope{Version: v, Order: cdr.LittleEndian}, RequestID: 3,
				ResponseFlags: giop.FlagsTwoway, Target: giop.KeyTarget([]byte("k")), Operation: "op"}
			if v != giop.V12 {
				req.Principal = []byte{}
			}
			req.SetBody(func(e *cdr.Encoder) { e.Octet(1); e.LongLong(-42) })
			req.Target = giop.KeyTarget([]byte("k" + strings.Repeat("y", extra)))
			b, err := ordered.Encode(req)
			if err != nil {
				t.Fatalf("%v extra %d: %v", v, extra, err)
			}
			m, err := giop.DecodeMessage(b)
			if err != nil {
				t.Fatalf("%v extra %d: %v", v, extra, err)
			}
			d := m.(*giop.Request).BodyDecoder()
			d.Octet("o")
			if got := d.LongLong("ll"); got != -42 || d.Err() != nil {
				t.Fatalf("%v extra %d: body long long %d, %v", v, extra, got, d.Err())
			}
			if len(req.Principal) != 0 {
				t.Fatalf("req.Principal changed to %v", req.Principal)
			}
		}
	}
}
