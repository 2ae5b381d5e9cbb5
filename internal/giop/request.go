package giop

import "github.com/fulcrum-lb/fulcrum/internal/giop/cdr"

// Response flags of a GIOP 1.2 Request (CORBA 3.x, GIOP chapter, "Request
// Message" › "Request Header"). Bit 0 set means a Reply is expected.
const (
	// FlagsOneway is SYNC_NONE or SYNC_WITH_TRANSPORT: no Reply.
	FlagsOneway uint8 = 0x00
	// FlagsSyncWithServer is SYNC_WITH_SERVER: a Reply with no body once
	// the server has the request.
	FlagsSyncWithServer uint8 = 0x01
	// FlagsTwoway is SYNC_WITH_TARGET, a normal two-way call.
	FlagsTwoway uint8 = 0x03
)

// Request is a GIOP Request message (CORBA 3.x, GIOP chapter, "Request
// Message"): GIOP::RequestHeader_1_0, _1_1 or _1_2 followed by the
// operation's arguments, kept undecoded in Body.
type Request struct {
	Envelope
	RequestID uint32
	// ResponseFlags is the 1.2 response_flags octet. GIOP 1.0 and 1.1 carry
	// a response_expected boolean instead, which decodes as FlagsTwoway or
	// FlagsOneway and is encoded as bit 0 of ResponseFlags.
	ResponseFlags uint8
	// Reserved is the reserved[3] field of 1.1 and 1.2 headers, as received.
	Reserved [3]byte
	// Target is the object: for 1.0 and 1.1 always KeyAddr (object_key).
	Target    TargetAddress
	Operation string
	// Principal is requesting_principal, GIOP 1.0 and 1.1 only.
	Principal       []byte
	ServiceContexts []ServiceContext
	// Body holds the arguments, undecoded.
	Body []byte
	// BodyOffset is the message offset Body was encoded for (set by the
	// decoder and by SetBody); alignment inside Body is relative to the
	// message start. Encoding fails with ErrBodyMisaligned rather than place
	// a non-empty Body at an offset that differs modulo 8. With no body it is
	// 0, unless a GIOP 1.2 sender padded the empty body to 8, in which case
	// it is the padded offset and encoding pads likewise.
	BodyOffset int
}

// Type returns MsgRequest.
func (*Request) Type() MsgType { return MsgRequest }

// ResponseExpected reports whether the client waits for a Reply.
func (r *Request) ResponseExpected() bool { return r.ResponseFlags&1 != 0 }

// SetBody replaces the body with what write encodes, positioned and aligned
// as it will be in r encoded as it now is. Change the header before the
// body, not after.
func (r *Request) SetBody(write func(e *cdr.Encoder)) {
	r.Body, r.BodyOffset = nil, 0
	off := bodyStart(r, r.Version.atLeast(2))
	r.Body = buildBody(r.Order, off, write)
	if r.Body != nil {
		r.BodyOffset = off
	}
}

// BodyDecoder returns a decoder for the body, aligned as in the message;
// error offsets count from the message start.
func (r *Request) BodyDecoder() *cdr.Decoder { return bodyDecoder(r.Body, r.Order, r.BodyOffset) }

func (r *Request) encode(e *cdr.Encoder) error {
	v := r.Version
	if v.atLeast(2) {
		if r.Principal != nil {
			return invalid("requesting_principal needs GIOP 1.0 or 1.1")
		}
		e.ULong(r.RequestID)
		e.Octet(r.ResponseFlags)
		e.Raw(r.Reserved[:])
		if err := encodeTarget(e, v, r.Target); err != nil {
			return err
		}
		e.String(r.Operation)
		encodeServiceContexts(e, r.ServiceContexts)
		return encodeBody(e, r.Body, r.BodyOffset, true)
	}
	encodeServiceContexts(e, r.ServiceContexts)
	e.ULong(r.RequestID)
	e.Boolean(r.ResponseExpected())
	if v.atLeast(1) {
		e.Raw(r.Reserved[:])
	}
	if err := encodeTarget(e, v, r.Target); err != nil {
		return err
	}
	e.String(r.Operation)
	e.OctetSeq(r.Principal)
	return encodeBody(e, r.Body, r.BodyOffset, false)
}

func (r *Request) decode(d *cdr.Decoder) {
	v := r.Version
	if v.atLeast(2) {
		r.RequestID = d.ULong("request_id")
		r.ResponseFlags = d.Octet("response_flags")
		copy(r.Reserved[:], d.Octets("reserved", 3))
		r.Target = decodeTarget(d, v)
		r.Operation = d.String("operation")
		r.ServiceContexts = decodeServiceContexts(d)
		r.Body, r.BodyOffset = decodeBody(d, true)
		return
	}
	r.ServiceContexts = decodeServiceContexts(d)
	r.RequestID = d.ULong("request_id")
	if d.Boolean("response_expected") {
		r.ResponseFlags = FlagsTwoway
	}
	if v.atLeast(1) {
		copy(r.Reserved[:], d.Octets("reserved", 3))
	}
	r.Target = decodeTarget(d, v)
	r.Operation = d.String("operation")
	r.Principal = d.OctetSeq("requesting_principal")
	r.Body, r.BodyOffset = decodeBody(d, false)
}
