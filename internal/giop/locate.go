package giop

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// LocateRequest asks where an object is without invoking it (CORBA 3.x,
// GIOP chapter, "LocateRequest Message"). GIOP 1.0 and 1.1 carry an
// object_key, decoded as a KeyAddr target.
type LocateRequest struct {
	Envelope
	RequestID uint32
	Target    TargetAddress
}

// Type returns MsgLocateRequest.
func (*LocateRequest) Type() MsgType { return MsgLocateRequest }

func (r *LocateRequest) encode(e *cdr.Encoder) error {
	e.ULong(r.RequestID)
	return encodeTarget(e, r.Version, r.Target)
}

func (r *LocateRequest) decode(d *cdr.Decoder) {
	r.RequestID = d.ULong("request_id")
	r.Target = decodeTarget(d, r.Version)
	d.Done("target")
}

// LocateStatus is a LocateReply's locate_status
// (GIOP::LocateStatusType_1_2).
type LocateStatus uint32

// Locate statuses (CORBA 3.x, GIOP chapter, "LocateReply Message" ›
// "LocateReply Header"); the last three are GIOP 1.2 additions.
const (
	LocateUnknownObject       LocateStatus = 0
	LocateObjectHere          LocateStatus = 1
	LocateObjectForward       LocateStatus = 2
	LocateObjectForwardPerm   LocateStatus = 3
	LocateSystemException     LocateStatus = 4
	LocateNeedsAddressingMode LocateStatus = 5
)

var locateStatusNames = [...]string{
	"UNKNOWN_OBJECT", "OBJECT_HERE", "OBJECT_FORWARD", "OBJECT_FORWARD_PERM",
	"LOC_SYSTEM_EXCEPTION", "LOC_NEEDS_ADDRESSING_MODE",
}

// String returns the spec's name, like "OBJECT_FORWARD".
func (s LocateStatus) String() string {
	if int(s) < len(locateStatusNames) {
		return locateStatusNames[s]
	}
	return fmt.Sprintf("LocateStatus(%d)", uint32(s))
}

func (s LocateStatus) validIn(v Version) bool {
	if v.atLeast(2) {
		return s <= LocateNeedsAddressingMode
	}
	return s <= LocateObjectForward
}

// LocateReply answers a LocateRequest (CORBA 3.x, GIOP chapter,
// "LocateReply Message"). Its body, which depends on Status, follows the
// header directly in every version: GIOP 1.2 does not re-align it to 8.
type LocateReply struct {
	Envelope
	RequestID uint32
	Status    LocateStatus
	// Body is the body, undecoded; see the typed accessors.
	Body []byte
	// BodyOffset is the message offset Body was encoded for; see
	// Request.BodyOffset.
	BodyOffset int
}

// Type returns MsgLocateReply.
func (*LocateReply) Type() MsgType { return MsgLocateReply }

// LocateReplyTo returns a LocateReply to req, in its version and byte
// order, with the given status and no body.
func LocateReplyTo(req *LocateRequest, status LocateStatus) *LocateReply {
	return &LocateReply{Envelope: Envelope{Version: req.Version, Order: req.Order}, RequestID: req.RequestID, Status: status}
}

// SetBody replaces the body with what write encodes, positioned as it will
// be in r.
func (r *LocateReply) SetBody(write func(e *cdr.Encoder)) {
	r.Body, r.BodyOffset = nil, 0
	off := bodyStart(r, false)
	r.Body = buildBody(r.Order, off, write)
	if r.Body != nil {
		r.BodyOffset = off
	}
}

// BodyDecoder returns a decoder for the body, aligned as in the message.
func (r *LocateReply) BodyDecoder() *cdr.Decoder {
	return bodyDecoder(r.Body, r.Order, r.BodyOffset)
}

// SetForward makes r an OBJECT_FORWARD (or, with perm, an
// OBJECT_FORWARD_PERM, GIOP 1.2 only) reply pointing at ref.
func (r *LocateReply) SetForward(ref ior.IOR, perm bool) {
	r.Status = LocateObjectForward
	if perm {
		r.Status = LocateObjectForwardPerm
	}
	r.SetBody(ref.Encode)
}

// Forward decodes the IOR of an OBJECT_FORWARD or OBJECT_FORWARD_PERM
// reply.
func (r *LocateReply) Forward() (ior.IOR, error) {
	if r.Status != LocateObjectForward && r.Status != LocateObjectForwardPerm {
		return ior.IOR{}, fmt.Errorf("giop: locate status %v carries no IOR", r.Status)
	}
	return decodeForward(r.BodyDecoder())
}

// SetSystemException makes r a LOC_SYSTEM_EXCEPTION reply (GIOP 1.2).
func (r *LocateReply) SetSystemException(ex SystemException) {
	r.Status = LocateSystemException
	r.SetBody(ex.encode)
}

// SystemException decodes the body of a LOC_SYSTEM_EXCEPTION reply.
func (r *LocateReply) SystemException() (SystemException, error) {
	if r.Status != LocateSystemException {
		return SystemException{}, fmt.Errorf("giop: locate status %v carries no system exception", r.Status)
	}
	return decodeSystemException(r.BodyDecoder())
}

// SetNeedsAddressingMode makes r a LOC_NEEDS_ADDRESSING_MODE reply (GIOP
// 1.2).
func (r *LocateReply) SetNeedsAddressingMode(a AddressingDisposition) {
	r.Status = LocateNeedsAddressingMode
	r.SetBody(func(e *cdr.Encoder) { e.Short(int16(a)) })
}

// AddressingMode decodes the body of a LOC_NEEDS_ADDRESSING_MODE reply.
func (r *LocateReply) AddressingMode() (AddressingDisposition, error) {
	if r.Status != LocateNeedsAddressingMode {
		return 0, fmt.Errorf("giop: locate status %v carries no addressing mode", r.Status)
	}
	return decodeAddressingMode(r.BodyDecoder())
}

func (r *LocateReply) encode(e *cdr.Encoder) error {
	if !r.Status.validIn(r.Version) {
		return invalid("locate status %v in GIOP %v", r.Status, r.Version)
	}
	e.ULong(r.RequestID)
	e.ULong(uint32(r.Status))
	return encodeBody(e, r.Body, r.BodyOffset, false)
}

func (r *LocateReply) decode(d *cdr.Decoder) {
	r.RequestID = d.ULong("request_id")
	d.Align("locate_status", 4)
	at := d.Offset()
	r.Status = LocateStatus(d.ULong("locate_status"))
	if d.Err() == nil && !r.Status.validIn(r.Version) {
		d.Fail("locate_status", at, cdr.ErrInvalid, "unknown locate status %d in GIOP %v", uint32(r.Status), r.Version)
	}
	r.Body, r.BodyOffset = decodeBody(d, false)
}
