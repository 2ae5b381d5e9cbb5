package replog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// codecVersion is the first byte of an encoded entry.
const codecVersion = 1

// Encode encodes e without its position (the engine's key or revision
// holds it): a version byte, then uvarint-prefixed session and origin,
// uvarint seq, varint append time (Unix nanoseconds), and the payload to
// the end.
func Encode(e Entry) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(e.Session)+len(e.Origin)+binary.MaxVarintLen64+len(e.Payload))
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, uint64(len(e.Session)))
	b = append(b, e.Session...)
	b = binary.AppendUvarint(b, e.Seq)
	b = binary.AppendUvarint(b, uint64(len(e.Origin)))
	b = append(b, e.Origin...)
	b = binary.AppendVarint(b, e.Appended.UnixNano())
	return append(b, e.Payload...)
}

// Decode decodes what Encode made into an entry at pos; the payload is a
// copy. Its error is a *DecodeError.
func Decode(pos uint64, b []byte) (Entry, error) {
	e, err := decode(b)
	if err != nil {
		return Entry{}, &DecodeError{Position: pos, Err: err}
	}
	e.Position = pos
	return e, nil
}

var errShort = errors.New("truncated")

func decode(b []byte) (Entry, error) {
	var e Entry
	if len(b) == 0 {
		return e, errors.New("empty")
	}
	if b[0] != codecVersion {
		return e, fmt.Errorf("version %d, want %d", b[0], codecVersion)
	}
	b = b[1:]
	str := func() (string, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", errShort
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, nil
	}
	var err error
	if e.Session, err = str(); err != nil {
		return e, fmt.Errorf("session: %w", err)
	}
	seq, k := binary.Uvarint(b)
	if k <= 0 {
		return e, fmt.Errorf("seq: %w", errShort)
	}
	e.Seq, b = seq, b[k:]
	if e.Origin, err = str(); err != nil {
		return e, fmt.Errorf("origin: %w", err)
	}
	ns, k := binary.Varint(b)
	if k <= 0 {
		return e, fmt.Errorf("time: %w", errShort)
	}
	e.Appended, b = time.Unix(0, ns).UTC(), b[k:]
	e.Payload = append([]byte{}, b...)
	return e, nil
}
