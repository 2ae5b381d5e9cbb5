package backend_test

import (
	"bytes"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

// A state ParseCounterState accepts encodes (without panicking) to bytes
// that parse back to the same state and encode the same again: what one
// replica hands another survives the trip.
func FuzzParseCounterState(f *testing.F) {
	f.Add([]byte(`{"value":5,"increments":5,"last_changed":"2026-11-27T10:00:00.123456789Z","last_id":1234}`))
	f.Add([]byte(`{"value":-1,"increments":0,"last_changed":"0001-01-01T00:00:00Z","last_id":0}`))
	f.Add([]byte(`{"value":1,"increments":1,"last_changed":"9999-12-31T23:59:59-01:00","last_id":7}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := backend.ParseCounterState(b)
		if err != nil {
			return
		}
		enc := backend.MarshalCounterState(st)
		again, err := backend.ParseCounterState(enc)
		if err != nil {
			t.Fatalf("%q parsed, its encoding %q does not: %v", b, enc, err)
		}
		if again != st || !bytes.Equal(backend.MarshalCounterState(again), enc) {
			t.Fatalf("%q: state %+v re-parsed as %+v", b, st, again)
		}
	})
}
