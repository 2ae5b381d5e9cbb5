package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// The stateful counter of seed 001's three-tier test application (MEAD,
// §5 "Test Application"): tier 3 increments a local counter and replies its
// value; tier 2 (the relay) adds tier 3's reply to a counter of its own.
// Both keep their state in a Counter and transfer it as CounterState's JSON
// encoding (HTTP GET/PUT /fulcrum/state, GIOP FT::Checkpointable).

// MaxStateBytes bounds a state body (PUT /fulcrum/state, set_state).
const MaxStateBytes = 64 << 10

// MaxIncrementBy bounds the by parameter of POST /increment.
const MaxIncrementBy = 1 << 31

// ErrCounterOverflow is returned by Counter.Add when the value would leave
// the int64 range; the counter is unchanged.
var ErrCounterOverflow = errors.New("backend: counter would overflow int64")

// ErrInvalidState wraps every error of ParseCounterState.
var ErrInvalidState = errors.New("backend: invalid counter state")

// CounterState is a counter's whole state, the bytes a replica transfers to
// another. Its JSON encoding (MarshalCounterState) is
//
//	{"value":5,"increments":5,"last_changed":"2026-11-27T10:00:00.000000001Z","last_id":1234}
//
// with every field present: a replica that sets it has exactly the state of
// the one that got it.
type CounterState struct {
	// Value is the counter.
	Value int64 `json:"value"`
	// Increments is how many additions were applied: for the counter
	// (tier 3), with the default by=1, equal to Value and to the number of
	// distinct requests it executed.
	Increments uint64 `json:"increments"`
	// LastChanged is the time of the last addition (the zero time before
	// the first): the request's Fulcrum-Time when it carries one, else the
	// server's clock. UTC.
	LastChanged time.Time `json:"last_changed"`
	// LastID is a random id drawn for the last addition (0 before the
	// first): from the request's Fulcrum-Seed when it carries one, else
	// the server's random source.
	LastID uint64 `json:"last_id"`
}

// Stamp is what an addition takes from outside: its time and its random id.
// Replicas that apply the same requests with the same stamps end in the
// same state.
type Stamp struct {
	Time time.Time
	ID   uint64
}

// Counter holds a CounterState. The zero value is a counter at 0. Safe for
// concurrent use; must not be copied.
type Counter struct {
	mu sync.Mutex
	st CounterState
}

// Add adds delta to the value, counts one increment, records s, and returns
// the new state. A result outside int64 returns ErrCounterOverflow and
// changes nothing.
func (c *Counter) Add(delta int64, s Stamp) (CounterState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if delta > 0 && c.st.Value > math.MaxInt64-delta || delta < 0 && c.st.Value < math.MinInt64-delta {
		return c.st, fmt.Errorf("%w: %d + %d", ErrCounterOverflow, c.st.Value, delta)
	}
	c.st.Value += delta
	c.st.Increments++
	c.st.LastChanged = s.Time.UTC()
	c.st.LastID = s.ID
	return c.st, nil
}

// State returns the current state.
func (c *Counter) State() CounterState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// Restore replaces the state with st.
func (c *Counter) Restore(st CounterState) {
	st.LastChanged = st.LastChanged.UTC()
	c.mu.Lock()
	c.st = st
	c.mu.Unlock()
}

// MarshalCounterState returns st's JSON encoding, the state's transfer form.
func MarshalCounterState(st CounterState) []byte {
	st.LastChanged = st.LastChanged.UTC()
	b, err := json.Marshal(st)
	if err != nil {
		panic(fmt.Sprintf("backend: encoding a counter state: %v", err)) // only plain fields: cannot fail
	}
	return b
}

// ParseCounterState decodes a state encoded by MarshalCounterState. It
// accepts exactly one JSON object with the four fields, each present and of
// its type (last_changed RFC 3339), and nothing else; any other input
// is an error wrapping ErrInvalidState that names what is wrong.
func ParseCounterState(b []byte) (CounterState, error) {
	if len(b) > MaxStateBytes {
		return CounterState{}, fmt.Errorf("%w: %d bytes, at most %d allowed", ErrInvalidState, len(b), MaxStateBytes)
	}
	var raw struct {
		Value       *int64     `json:"value"`
		Increments  *uint64    `json:"increments"`
		LastChanged *time.Time `json:"last_changed"`
		LastID      *uint64    `json:"last_id"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return CounterState{}, fmt.Errorf("%w: field %q: JSON %s, want %s", ErrInvalidState, te.Field, te.Value, stateFieldWant[te.Field])
		}
		return CounterState{}, fmt.Errorf("%w: %v; want a JSON object %s", ErrInvalidState, err, stateShape)
	}
	if _, err := d.Token(); err != io.EOF {
		return CounterState{}, fmt.Errorf("%w: data after the JSON object; want exactly one object %s", ErrInvalidState, stateShape)
	}
	for _, f := range []struct {
		name    string
		present bool
	}{{"value", raw.Value != nil}, {"increments", raw.Increments != nil}, {"last_changed", raw.LastChanged != nil}, {"last_id", raw.LastID != nil}} {
		if !f.present {
			return CounterState{}, fmt.Errorf("%w: field %q missing (or null), want %s", ErrInvalidState, f.name, stateFieldWant[f.name])
		}
	}
	if err := checkStampTime(*raw.LastChanged); err != nil {
		return CounterState{}, fmt.Errorf("%w: field \"last_changed\": %v", ErrInvalidState, err)
	}
	return CounterState{Value: *raw.Value, Increments: *raw.Increments, LastChanged: raw.LastChanged.UTC(), LastID: *raw.LastID}, nil
}

// checkStampTime refuses a time whose UTC year is outside [0, 9999], which
// RFC 3339 (and so the state's encoding) cannot write.
func checkStampTime(t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("%s is in UTC year %d, want a year in [0, 9999]", t.Format(time.RFC3339Nano), y)
	}
	return nil
}

const stateShape = `{"value": int64, "increments": uint64, "last_changed": RFC 3339 time, "last_id": uint64}`

var stateFieldWant = map[string]string{
	"value":        "an integer in the int64 range",
	"increments":   "an integer in [0, 2^64)",
	"last_changed": "an RFC 3339 time string",
	"last_id":      "an integer in [0, 2^64)",
}
