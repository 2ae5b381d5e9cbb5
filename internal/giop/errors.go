package giop

import (
	"errors"
	"fmt"
)

// Decoding errors. The front door answers all of them with MessageError and
// closes the connection (CORBA 3.x, GIOP chapter, "MessageError Message");
// test with errors.Is. Errors from DecodeMessage also wrap the
// [*cdr.Error] that names the field and offset, when there is one.
var (
	// ErrBadMagic: the first four bytes are not "GIOP".
	ErrBadMagic = errors.New("giop: bad magic")
	// ErrVersion: a GIOP version other than 1.0, 1.1 or 1.2.
	ErrVersion = errors.New("giop: unsupported GIOP version")
	// ErrTooLarge: message_size above the configured limit.
	ErrTooLarge = errors.New("giop: message too large")
	// ErrMalformed: anything else wrong with the bytes.
	ErrMalformed = errors.New("giop: malformed message")
)

// Encoding errors.
var (
	// ErrInvalid: a message that cannot be written in its version, such as a
	// ProfileAddr target in GIOP 1.0 or LOCATION_FORWARD_PERM before 1.2.
	ErrInvalid = errors.New("giop: invalid message")
	// ErrBodyMisaligned: a raw body would land at an offset that is not
	// congruent modulo 8 with the one it was encoded for, which would break
	// the alignment of its contents. It happens when a GIOP 1.0 or 1.1 header
	// changes length by other than a multiple of 8; rebuild the body with
	// SetBody, or keep the header's length.
	ErrBodyMisaligned = errors.New("giop: body alignment would change")
)

// encodeError is what a message's encode method returns: the sentinel and
// the detail, which encodeMessage puts together with the message's version
// and type.
type encodeError struct {
	kind   error
	detail string
}

func (e *encodeError) Error() string { return e.kind.Error() + ": " + e.detail }

func (e *encodeError) Unwrap() error { return e.kind }

func invalid(format string, args ...any) error {
	return &encodeError{ErrInvalid, fmt.Sprintf(format, args...)}
}
