package giop

import (
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// Envelope is what every message carries in its header besides its type
// and size.
type Envelope struct {
	Version Version
	Order   cdr.ByteOrder
	// MoreFragments says Fragment messages continue this one. Allowed on
	// Request and Reply from GIOP 1.1, LocateRequest and LocateReply from
	// 1.2, and Fragment.
	MoreFragments bool
}

func (e *Envelope) envelope() *Envelope { return e }

// Message is one GIOP message: *[Request], *[Reply], *[CancelRequest],
// *[LocateRequest], *[LocateReply], *[CloseConnection], *[MessageError]
// or *[Fragment].
type Message interface {
	// Type returns the message's type.
	Type() MsgType
	envelope() *Envelope
	// encode writes what follows the header at e's position.
	encode(e *cdr.Encoder) error
	// decode reads what follows the header; failures go to d.
	decode(d *cdr.Decoder)
}

// EnvelopeOf returns m's version, byte order and fragment flag.
func EnvelopeOf(m Message) Envelope { return *m.envelope() }

// DecodeMessage decodes one whole message, header included, with the
// default limits.
func DecodeMessage(b []byte) (Message, error) { return Limits{}.DecodeMessage(b) }

// DecodeMessage decodes one whole message: b must hold the header and
// exactly message_size more bytes. Byte slices in the result alias b. A
// first fragment must hold its whole message header (everything before the
// body); reassemble a header split across fragments before decoding it.
func (l Limits) DecodeMessage(b []byte) (Message, error) {
	h, err := l.ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if got := len(b) - HeaderSize; uint64(got) != uint64(h.Size) {
		return nil, fmt.Errorf("%w: message_size %d at offset 8 but %d bytes follow the header", ErrMalformed, h.Size, got)
	}
	m := newMessage(h.Type)
	*m.envelope() = Envelope{Version: h.Version, Order: h.Order, MoreFragments: h.MoreFragments}
	d := cdr.NewDecoder(b, h.Order, 0)
	d.Octets("header", HeaderSize)
	m.decode(d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: GIOP %v %v: %w", ErrMalformed, h.Version, h.Type, err)
	}
	return m, nil
}

func newMessage(t MsgType) Message {
	switch t {
	case MsgRequest:
		return new(Request)
	case MsgReply:
		return new(Reply)
	case MsgCancelRequest:
		return new(CancelRequest)
	case MsgLocateRequest:
		return new(LocateRequest)
	case MsgLocateReply:
		return new(LocateReply)
	case MsgCloseConnection:
		return new(CloseConnection)
	case MsgMessageError:
		return new(MessageError)
	}
	return new(Fragment)
}

// EncodeMessage returns m encoded, header included.
func EncodeMessage(m Message) ([]byte, error) { return AppendMessage(nil, m) }

// AppendMessage appends m, header included, to dst. Alignment is relative to
// the message's first byte, wherever it lands in dst. On error dst is
// returned unchanged in length.
func AppendMessage(dst []byte, m Message) ([]byte, error) {
	e := cdr.NewEncoder(dst, m.envelope().Order, 0)
	if err := encodeMessage(e, m); err != nil {
		return dst, err
	}
	return e.Bytes(), nil
}

// encodeMessage writes m at e's position, which must be alignment offset 0.
func encodeMessage(e *cdr.Encoder, m Message) error {
	env := m.envelope()
	if !env.Version.Supported() {
		return fmt.Errorf("%w: GIOP version %v", ErrInvalid, env.Version)
	}
	if env.Order > cdr.LittleEndian {
		return fmt.Errorf("%w: byte order %d", ErrInvalid, env.Order)
	}
	t := m.Type()
	if !t.validIn(env.Version) {
		return fmt.Errorf("%w: no %v in GIOP %v", ErrInvalid, t, env.Version)
	}
	if env.MoreFragments && !t.fragmentableIn(env.Version) {
		return fmt.Errorf("%w: a GIOP %v %v cannot be fragmented", ErrInvalid, env.Version, t)
	}
	start := e.Len()
	appendHeader(e, Header{Version: env.Version, Order: env.Order, MoreFragments: env.MoreFragments, Type: t})
	if err := m.encode(e); err != nil {
		var ee *encodeError
		if errors.As(err, &ee) {
			return fmt.Errorf("%w: GIOP %v %v: %s", ee.kind, env.Version, t, ee.detail)
		}
		return err
	}
	n := e.Len() - start - HeaderSize
	if err := checkSize(n); err != nil {
		return err
	}
	env.Order.PutUint32(e.Bytes()[start+8:], uint32(n))
	return nil
}
