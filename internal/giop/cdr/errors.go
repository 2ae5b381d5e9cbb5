package cdr

import (
	"errors"
	"fmt"
)

// Sentinel causes of an [*Error]; test with errors.Is.
var (
	// ErrTruncated: the data ends inside a value or its alignment padding.
	ErrTruncated = errors.New("cdr: truncated")
	// ErrLength: a length or element count promises more than the bytes left.
	ErrLength = errors.New("cdr: length exceeds the data")
	// ErrInvalid: a value outside its type's or field's range.
	ErrInvalid = errors.New("cdr: invalid value")
	// ErrTrailing: bytes left over after a value that must fill its container.
	ErrTrailing = errors.New("cdr: unread bytes")
)

// Error is a decoding failure: which field, where, and why.
type Error struct {
	// Field names what was being decoded, in the spec's IDL names
	// ("object_key", "service_context.context_id").
	Field string
	// Offset is where the field starts, in bytes from the start of the
	// outermost buffer (the GIOP message header for messages).
	Offset int
	// Err is one of ErrTruncated, ErrLength, ErrInvalid, ErrTrailing.
	Err error
	// Detail says what was wrong in words.
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cdr: %s at offset %d: %s", e.Field, e.Offset, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }
