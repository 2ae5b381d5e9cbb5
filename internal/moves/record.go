package moves

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Record is a planned move as stored in etcd, the value of its key.
type Record struct {
	// To is the replica id the client is to be bound to.
	To string `json:"to"`
	// Term is the term of the leader that planned the move (its fence's
	// term; > 0).
	Term int64 `json:"term"`
	// Epoch is the epoch of the advisory that sends the client back.
	Epoch uint64 `json:"epoch"`
	// PlannedAt is when the analyzer planned the move.
	PlannedAt time.Time `json:"planned_at"`
}

// Move is one planned move handed to Commit.
type Move struct {
	// Client is the client's id (any non-empty string).
	Client string
	// To is the replica id the client is to be bound to (non-empty).
	To string
	// Epoch is the epoch of the advisory that sends the client back.
	Epoch uint64
	// PlannedAt is when the analyzer planned the move.
	PlannedAt time.Time
}

// encode is the value of m's key under term.
func encode(m Move, term int64) ([]byte, error) {
	b, err := json.Marshal(Record{To: m.To, Term: term, Epoch: m.Epoch, PlannedAt: m.PlannedAt.UTC()})
	if err != nil {
		return nil, fmt.Errorf("moves: encode move of client %q: %w", m.Client, err)
	}
	return b, nil
}

// Decode reads the value of key (named in errors). It requires every
// field, each of its type: to a non-empty string, term a positive
// integer, epoch a non-negative integer, planned_at an RFC 3339 time.
// Fields it does not know are ignored.
func Decode(key string, value []byte) (Record, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(value, &raw); err != nil {
		return Record{}, fmt.Errorf("moves: value of %s: %q is not a JSON object: %w", key, clip(value), err)
	}
	var r Record
	field := func(name, allowed string, dst any, ok func() bool) error {
		v, present := raw[name]
		if !present {
			return fmt.Errorf("moves: value of %s: field %q: missing, want %s", key, name, allowed)
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) || json.Unmarshal(v, dst) != nil || !ok() {
			return fmt.Errorf("moves: value of %s: field %q: invalid value %s, want %s", key, name, clip(v), allowed)
		}
		return nil
	}
	if err := field("to", "a non-empty string (a replica id)", &r.To, func() bool { return r.To != "" }); err != nil {
		return Record{}, err
	}
	if err := field("term", "a positive integer", &r.Term, func() bool { return r.Term > 0 }); err != nil {
		return Record{}, err
	}
	if err := field("epoch", "a non-negative integer", &r.Epoch, func() bool { return true }); err != nil {
		return Record{}, err
	}
	if err := field("planned_at", "an RFC 3339 time", &r.PlannedAt, func() bool { return !r.PlannedAt.IsZero() }); err != nil {
		return Record{}, err
	}
	return r, nil
}

// clip shortens a value quoted in an error.
func clip(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
