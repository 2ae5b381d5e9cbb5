package ordered

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// ServiceFTRequest is IOP::FT_REQUEST, the service id of
// FT::FTRequestServiceContext.
const ServiceFTRequest giop.ServiceID = 13

// MaxClientIDLength bounds an FT_REQUEST client_id, in characters: it is
// the request's session in the log (protocol.MaxSessionLength).
const MaxClientIDLength = 128

// ErrMalformed is wrapped by every decoding error of this package.
var ErrMalformed = errors.New("ordered: malformed service context")

// FTRequest is FT::FTRequestServiceContext: the identity a fault-tolerant
// client gives a request. A retry of the request (after a failover, on any
// connection) carries the same one.
type FTRequest struct {
	// ClientID identifies the client ORB: 1 to MaxClientIDLength
	// characters of UTF-8.
	ClientID string
	// RetentionID identifies the request among the client's.
	RetentionID int32
	// ExpirationTime is a TimeBase::TimeT: 100-nanosecond units since
	// 1582-10-15 00:00 UTC, after which the client no longer retries. The
	// bridge keeps replies for the group's session TTL and ignores it.
	ExpirationTime uint64
}

// Seq is the request's sequence number in the log: the retention id as
// an unsigned 32-bit number.
func (r FTRequest) Seq() uint64 { return uint64(uint32(r.RetentionID)) }

// Encode returns r as service context data in byte order o.
func (r FTRequest) Encode(o cdr.ByteOrder) []byte {
	e := cdr.NewEncoder(nil, o, 0)
	e.Octet(byte(o))
	e.String(r.ClientID)
	e.Long(r.RetentionID)
	e.ULongLong(r.ExpirationTime)
	return e.Bytes()
}

// DecodeFTRequest decodes the data of an FT_REQUEST service context. It
// refuses an empty client_id or one that is not UTF-8 or longer than
// MaxClientIDLength characters, and bytes left after expiration_time.
func DecodeFTRequest(data []byte) (FTRequest, error) {
	var r FTRequest
	d, err := encapsulation(data, "FT_REQUEST")
	if err != nil {
		return r, err
	}
	d.Align("client_id", 4)
	at := d.Offset()
	r.ClientID = d.String("client_id")
	r.RetentionID = d.Long("retention_id")
	r.ExpirationTime = d.ULongLong("expiration_time")
	d.Done("expiration_time")
	if err := d.Err(); err != nil {
		return FTRequest{}, fmt.Errorf("%w: FT_REQUEST: %w", ErrMalformed, err)
	}
	switch n := utf8.RuneCountInString(r.ClientID); {
	case r.ClientID == "":
		return FTRequest{}, fmt.Errorf("%w: FT_REQUEST: client_id at offset %d: empty, want 1 to %d characters", ErrMalformed, at, MaxClientIDLength)
	case !utf8.ValidString(r.ClientID):
		return FTRequest{}, fmt.Errorf("%w: FT_REQUEST: client_id %q at offset %d: not valid UTF-8", ErrMalformed, r.ClientID, at)
	case n > MaxClientIDLength:
		return FTRequest{}, fmt.Errorf("%w: FT_REQUEST: client_id at offset %d: %d characters, want at most %d", ErrMalformed, at, n, MaxClientIDLength)
	}
	return r, nil
}

// encapsulation returns a decoder positioned after the byte-order octet of
// the encapsulation data, aligned relative to its first octet.
func encapsulation(data []byte, name string) (*cdr.Decoder, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: %s: empty context data, want an encapsulation (a byte-order octet first)", ErrMalformed, name)
	}
	if data[0] > 1 {
		return nil, fmt.Errorf("%w: %s: byte-order octet %d at offset 0, want 0 or 1", ErrMalformed, name, data[0])
	}
	d := cdr.NewDecoder(data, cdr.ByteOrder(data[0]), 0)
	d.Octet("byte order")
	return d, nil
}
