package replog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC)
	for _, e := range []Entry{
		{Session: "s", Seq: 1, Origin: "fulcrum-a", Appended: at, Payload: []byte("POST /increment")},
		{Session: strings.Repeat("é", MaxSessionLen), Seq: 1<<64 - 1, Appended: at, Payload: nil},
		{Session: "x", Seq: 0, Origin: "", Appended: time.Unix(0, 0).UTC(), Payload: []byte{0, 1, 2}},
	} {
		got, err := Decode(7, Encode(e))
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", e, err)
		}
		e.Position = 7
		if got.Position != 7 || got.Session != e.Session || got.Seq != e.Seq || got.Origin != e.Origin || !got.Appended.Equal(e.Appended) || string(got.Payload) != string(e.Payload) {
			t.Errorf("round trip: %+v, want %+v", got, e)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	good := Encode(Entry{Session: "session", Seq: 300, Origin: "origin", Appended: time.Unix(1, 0), Payload: []byte("p")})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"truncated": good[:4],
		"long name": {1, 0xff, 0x01},
	} {
		_, err := Decode(42, b)
		var de *DecodeError
		if !errors.As(err, &de) || de.Position != 42 || !errors.Is(err, ErrUndecodable) || !strings.Contains(err.Error(), "position 42") {
			t.Errorf("%s: %v, want a DecodeError naming position 42", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Entry{Session: "s", Seq: 1, Origin: "o", Payload: []byte("x")}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(1, b)
		if err != nil {
			return
		}
		again, err := Decode(1, Encode(e))
		if err != nil || again.Session != e.Session || again.Seq != e.Seq || string(again.Payload) != string(e.Payload) {
			t.Fatalf("re-encoding %+v: %+v, %v", e, again, err)
		}
	})
}

func TestLimitsAndSessions(t *testing.T) {
	t.Parallel()
	l, err := Limits{}.WithDefaults()
	if err != nil || l.MaxPayload != DefaultMaxPayload || l.MaxLogBytes != DefaultMaxLogBytes {
		t.Fatalf("defaults: %+v, %v", l, err)
	}
	for _, tc := range []struct {
		l    Limits
		want string
	}{
		{Limits{MaxPayload: -1}, "max_payload -1"},
		{Limits{MaxPayload: 100, MaxLogBytes: 99}, "max_log_bytes 99"},
	} {
		if _, err := tc.l.WithDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
	for s, ok := range map[string]bool{"": false, "a": true, strings.Repeat("é", 128): true, strings.Repeat("a", 129): false, "\xff": false} {
		if err := CheckSession(s); (err == nil) != ok || (err != nil && !errors.Is(err, ErrBadSession)) {
			t.Errorf("CheckSession(%.10q…): %v, want ok=%v", s, err, ok)
		}
	}
}
