package replog

import (
	"context"
	"fmt"
	"iter"
	"time"
	"unicode/utf8"
)

// Defaults of Limits and of a session's life.
const (
	// DefaultMaxPayload is Limits.MaxPayload's default (1 MiB), below
	// etcd's default --max-request-bytes (1.5 MiB).
	DefaultMaxPayload = 1 << 20
	// DefaultMaxLogBytes is Limits.MaxLogBytes's default (256 MiB).
	DefaultMaxLogBytes = 256 << 20
	// DefaultSessionTTL is how long a session's dedup index lives after
	// its last use.
	DefaultSessionTTL = 10 * time.Minute
	// MaxSessionLen is the longest session id, in characters.
	MaxSessionLen = 128
)

// Log is the ordered log of one replicated group. Its methods are safe
// for concurrent use.
type Log interface {
	// AppendOrGet appends a's request if a.Session has not appended
	// a.Seq while the session lives, and returns its position with
	// existed false; otherwise it appends nothing and returns the
	// position of the first append with existed true (even when the log
	// is full). It checks a.Payload against MaxPayload first and
	// refuses it (*PayloadTooLargeError) without looking further. Using
	// a session keeps it alive for SessionTTL more.
	AppendOrGet(ctx context.Context, a Append) (pos uint64, existed bool, err error)
	// Watch yields the entries at position from and after, in order,
	// each once, waiting for new ones until ctx ends; from 0 means the
	// first position. It ends after yielding one error: ctx's error,
	// ErrClosed, a *TrimmedError when from (or the next entry the watch
	// needs) is at or below the trim point, a *DecodeError for an entry
	// it cannot decode, or the engine's error. The entries' payloads are
	// the caller's.
	Watch(ctx context.Context, from uint64) iter.Seq2[Entry, error]
	// Trim deletes the entries at positions up to and including to and
	// moves the trim point there; a to at or below the trim point changes
	// nothing. Their bytes no longer count against MaxLogBytes.
	Trim(ctx context.Context, to uint64) error
	// Close releases the log; watches end with ErrClosed. A second call
	// does nothing.
	Close() error
}

// Append is one request to append.
type Append struct {
	// Session identifies the client (1 to MaxSessionLen characters of
	// valid UTF-8); with Seq it is the request's identity.
	Session string
	// Seq is unique within the session (not ordered).
	Seq uint64
	// Payload is the request, opaque to the log.
	Payload []byte
	// Origin names the instance that appends, so that replies can be
	// routed to it.
	Origin string
}

// Entry is one entry of the log.
type Entry struct {
	Position uint64
	Session  string
	Seq      uint64
	Origin   string
	// Appended is when the appending instance took the entry, on its
	// clock.
	Appended time.Time
	Payload  []byte
}

// Limits bound one group's log.
type Limits struct {
	// MaxPayload is the largest payload accepted, in bytes; default
	// DefaultMaxPayload, at least 1.
	MaxPayload int
	// MaxLogBytes bounds the payload bytes of the untrimmed entries;
	// default DefaultMaxLogBytes, at least MaxPayload.
	MaxLogBytes int64
}

// WithDefaults fills the defaults and checks l; errors name the field,
// the value and what is allowed.
func (l Limits) WithDefaults() (Limits, error) {
	if l.MaxPayload == 0 {
		l.MaxPayload = DefaultMaxPayload
	}
	if l.MaxLogBytes == 0 {
		l.MaxLogBytes = DefaultMaxLogBytes
	}
	if l.MaxPayload < 1 {
		return l, fmt.Errorf("replog: max_payload %d: must be at least 1", l.MaxPayload)
	}
	if l.MaxLogBytes < int64(l.MaxPayload) {
		return l, fmt.Errorf("replog: max_log_bytes %d: must be at least max_payload (%d)", l.MaxLogBytes, l.MaxPayload)
	}
	return l, nil
}

// Check refuses a payload above MaxPayload and a session id that is empty,
// too long or not UTF-8.
func (l Limits) Check(a Append) error {
	if len(a.Payload) > l.MaxPayload {
		return &PayloadTooLargeError{Size: len(a.Payload), Max: l.MaxPayload}
	}
	return CheckSession(a.Session)
}

// CheckSession refuses a session id that is empty, longer than
// MaxSessionLen characters or not valid UTF-8.
func CheckSession(s string) error {
	if s == "" {
		return fmt.Errorf("%w: session: empty, want 1 to %d characters", ErrBadSession, MaxSessionLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: session %q: not valid UTF-8", ErrBadSession, s)
	}
	if n := utf8.RuneCountInString(s); n > MaxSessionLen {
		return fmt.Errorf("%w: session of %d characters: want at most %d", ErrBadSession, n, MaxSessionLen)
	}
	return nil
}

// CheckTTL refuses a session TTL below min.
func CheckTTL(ttl, min time.Duration) error {
	if ttl < min {
		return fmt.Errorf("replog: session_ttl %v: must be at least %v", ttl, min)
	}
	return nil
}
