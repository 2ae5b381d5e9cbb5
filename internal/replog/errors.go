package replog

import (
	"errors"
	"fmt"
)

// Sentinels; the typed errors below match them with errors.Is.
var (
	// ErrTrimmed: a watch wanted entries at or below the trim point.
	ErrTrimmed = errors.New("replog: trimmed")
	// ErrPayloadTooLarge: a payload above Limits.MaxPayload (413).
	ErrPayloadTooLarge = errors.New("replog: payload too large")
	// ErrLogFull: the group's log holds Limits.MaxLogBytes (507).
	ErrLogFull = errors.New("replog: log full")
	// ErrUndecodable: an entry that cannot be decoded.
	ErrUndecodable = errors.New("replog: entry cannot be decoded")
	// ErrBadSession: a session id that is empty, too long or not UTF-8.
	ErrBadSession = errors.New("replog: bad session")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("replog: closed")
)

// TrimmedError says that a watch needed position From, and the log is
// trimmed up to and including TrimmedTo (>= From).
type TrimmedError struct {
	From, TrimmedTo uint64
}

func (e *TrimmedError) Error() string {
	return fmt.Sprintf("replog: position %d is trimmed (the log is trimmed up to %d)", e.From, e.TrimmedTo)
}

func (e *TrimmedError) Is(target error) bool { return target == ErrTrimmed }

// PayloadTooLargeError refuses a payload of Size bytes above Max.
type PayloadTooLargeError struct {
	Size, Max int
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("replog: payload of %d bytes: max_payload is %d", e.Size, e.Max)
}

func (e *PayloadTooLargeError) Is(target error) bool { return target == ErrPayloadTooLarge }

// LogFullError refuses an append of Size bytes to a log holding Bytes
// untrimmed payload bytes, whose limit is Max.
type LogFullError struct {
	Size       int
	Bytes, Max int64
}

func (e *LogFullError) Error() string {
	return fmt.Sprintf("replog: log full: %d untrimmed bytes + %d would exceed max_log_bytes %d", e.Bytes, e.Size, e.Max)
}

func (e *LogFullError) Is(target error) bool { return target == ErrLogFull }

// DecodeError is an entry at Position that cannot be decoded.
type DecodeError struct {
	Position uint64
	Err      error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("replog: entry at position %d cannot be decoded: %v", e.Position, e.Err)
}

func (e *DecodeError) Is(target error) bool { return target == ErrUndecodable }

func (e *DecodeError) Unwrap() error { return e.Err }
