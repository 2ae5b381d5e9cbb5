package giop

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// ReplyStatus is a Reply's reply_status (GIOP::ReplyStatusType_1_2).
type ReplyStatus uint32

// Reply statuses (CORBA 3.x, GIOP chapter, "Reply Message" › "Reply
// Header"). The last two are GIOP 1.2 additions.
const (
	StatusNoException         ReplyStatus = 0
	StatusUserException       ReplyStatus = 1
	StatusSystemException     ReplyStatus = 2
	StatusLocationForward     ReplyStatus = 3
	StatusLocationForwardPerm ReplyStatus = 4
	StatusNeedsAddressingMode ReplyStatus = 5
)

var replyStatusNames = [...]string{
	"NO_EXCEPTION", "USER_EXCEPTION", "SYSTEM_EXCEPTION", "LOCATION_FORWARD",
	"LOCATION_FORWARD_PERM", "NEEDS_ADDRESSING_MODE",
}

// String returns the spec's name, like "LOCATION_FORWARD".
func (s ReplyStatus) String() string {
	if int(s) < len(replyStatusNames) {
		return replyStatusNames[s]
	}
	return fmt.Sprintf("ReplyStatus(%d)", uint32(s))
}

func (s ReplyStatus) validIn(v Version) bool {
	if v.atLeast(2) {
		return s <= StatusNeedsAddressingMode
	}
	return s <= StatusLocationForward
}

// Reply is a GIOP Reply message (CORBA 3.x, GIOP chapter, "Reply Message"):
// GIOP::ReplyHeader_1_0 or _1_2 followed by a body whose meaning depends on
// Status: results, an exception, an IOR to go to, or an addressing mode.
type Reply struct {
	Envelope
	RequestID       uint32
	Status          ReplyStatus
	ServiceContexts []ServiceContext
	// Body is the reply body, undecoded; see the typed accessors.
	Body []byte
	// BodyOffset is the message offset Body was encoded for; see
	// Request.BodyOffset.
	BodyOffset int
}

// Type returns MsgReply.
func (*Reply) Type() MsgType { return MsgReply }

// ReplyTo returns a Reply to req, in its version and byte order, with the
// given status and no body.
func ReplyTo(req *Request, status ReplyStatus) *Reply {
	return &Reply{Envelope: Envelope{Version: req.Version, Order: req.Order}, RequestID: req.RequestID, Status: status}
}

// SetBody replaces the body with what write encodes, positioned and aligned
// as it will be in r encoded as it now is. Change the header before the
// body, not after.
func (r *Reply) SetBody(write func(e *cdr.Encoder)) {
	r.Body, r.BodyOffset = nil, 0
	off := bodyStart(r, r.Version.atLeast(2))
	r.Body = buildBody(r.Order, off, write)
	if r.Body != nil {
		r.BodyOffset = off
	}
}

// BodyDecoder returns a decoder for the body, aligned as in the message;
// error offsets count from the message start.
func (r *Reply) BodyDecoder() *cdr.Decoder { return bodyDecoder(r.Body, r.Order, r.BodyOffset) }

// SetForward makes r a LOCATION_FORWARD (or, with perm, a
// LOCATION_FORWARD_PERM, GIOP 1.2 only) reply sending the client to ref.
func (r *Reply) SetForward(ref ior.IOR, perm bool) {
	r.Status = StatusLocationForward
	if perm {
		r.Status = StatusLocationForwardPerm
	}
	r.SetBody(ref.Encode)
}

// Forward decodes the IOR of a LOCATION_FORWARD or LOCATION_FORWARD_PERM
// reply.
func (r *Reply) Forward() (ior.IOR, error) {
	if r.Status != StatusLocationForward && r.Status != StatusLocationForwardPerm {
		return ior.IOR{}, fmt.Errorf("giop: reply status %v carries no IOR", r.Status)
	}
	return decodeForward(r.BodyDecoder())
}

// SetSystemException makes r a SYSTEM_EXCEPTION reply carrying ex.
func (r *Reply) SetSystemException(ex SystemException) {
	r.Status = StatusSystemException
	r.SetBody(ex.encode)
}

// SystemException decodes the body of a SYSTEM_EXCEPTION reply.
func (r *Reply) SystemException() (SystemException, error) {
	if r.Status != StatusSystemException {
		return SystemException{}, fmt.Errorf("giop: reply status %v carries no system exception", r.Status)
	}
	return decodeSystemException(r.BodyDecoder())
}

// SetNeedsAddressingMode makes r a NEEDS_ADDRESSING_MODE reply (GIOP 1.2)
// asking the client to resend with targets of disposition a.
func (r *Reply) SetNeedsAddressingMode(a AddressingDisposition) {
	r.Status = StatusNeedsAddressingMode
	r.SetBody(func(e *cdr.Encoder) { e.Short(int16(a)) })
}

// AddressingMode decodes the body of a NEEDS_ADDRESSING_MODE reply.
func (r *Reply) AddressingMode() (AddressingDisposition, error) {
	if r.Status != StatusNeedsAddressingMode {
		return 0, fmt.Errorf("giop: reply status %v carries no addressing mode", r.Status)
	}
	return decodeAddressingMode(r.BodyDecoder())
}

func (r *Reply) encode(e *cdr.Encoder) error {
	if !r.Status.validIn(r.Version) {
		return invalid("reply status %v in GIOP %v", r.Status, r.Version)
	}
	if r.Version.atLeast(2) {
		e.ULong(r.RequestID)
		e.ULong(uint32(r.Status))
		encodeServiceContexts(e, r.ServiceContexts)
		return encodeBody(e, r.Body, r.BodyOffset, true)
	}
	encodeServiceContexts(e, r.ServiceContexts)
	e.ULong(r.RequestID)
	e.ULong(uint32(r.Status))
	return encodeBody(e, r.Body, r.BodyOffset, false)
}

func (r *Reply) decode(d *cdr.Decoder) {
	v := r.Version
	if !v.atLeast(2) {
		r.ServiceContexts = decodeServiceContexts(d)
	}
	r.RequestID = d.ULong("request_id")
	d.Align("reply_status", 4)
	at := d.Offset()
	r.Status = ReplyStatus(d.ULong("reply_status"))
	if d.Err() == nil && !r.Status.validIn(v) {
		d.Fail("reply_status", at, cdr.ErrInvalid, "unknown reply status %d in GIOP %v", uint32(r.Status), v)
	}
	if v.atLeast(2) {
		r.ServiceContexts = decodeServiceContexts(d)
	}
	r.Body, r.BodyOffset = decodeBody(d, v.atLeast(2))
}

func decodeForward(d *cdr.Decoder) (ior.IOR, error) {
	ref := ior.Decode(d)
	d.Done("forward IOR")
	if err := d.Err(); err != nil {
		return ior.IOR{}, fmt.Errorf("giop: forward IOR: %w", err)
	}
	return ref, nil
}

func decodeAddressingMode(d *cdr.Decoder) (AddressingDisposition, error) {
	a := AddressingDisposition(d.Short("addressing_disposition"))
	d.Done("addressing_disposition")
	if err := d.Err(); err != nil {
		return 0, fmt.Errorf("giop: %w", err)
	}
	return a, nil
}
