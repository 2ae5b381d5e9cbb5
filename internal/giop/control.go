package giop

import "github.com/fulcrum-lb/fulcrum/internal/giop/cdr"

// CancelRequest tells the server the client no longer waits for the reply
// to RequestID (CORBA 3.x, GIOP chapter, "CancelRequest Message").
type CancelRequest struct {
	Envelope
	RequestID uint32
}

// Type returns MsgCancelRequest.
func (*CancelRequest) Type() MsgType { return MsgCancelRequest }

func (r *CancelRequest) encode(e *cdr.Encoder) error {
	e.ULong(r.RequestID)
	return nil
}

func (r *CancelRequest) decode(d *cdr.Decoder) {
	r.RequestID = d.ULong("request_id")
	d.Done("request_id")
}

// CloseConnection announces that the sender closes the connection and will
// answer no outstanding request (CORBA 3.x, GIOP chapter, "CloseConnection
// Message"). It has no body.
type CloseConnection struct {
	Envelope
}

// Type returns MsgCloseConnection.
func (*CloseConnection) Type() MsgType { return MsgCloseConnection }

func (*CloseConnection) encode(*cdr.Encoder) error { return nil }

func (*CloseConnection) decode(d *cdr.Decoder) { d.Done("header") }

// MessageError answers a message that could not be understood: bad magic,
// an unsupported version, a malformed header or body (CORBA 3.x, GIOP
// chapter, "MessageError Message"). It has no body. Send it in the
// [Highest] version the sender supports when the peer's is unsupported.
type MessageError struct {
	Envelope
}

// Type returns MsgMessageError.
func (*MessageError) Type() MsgType { return MsgMessageError }

func (*MessageError) encode(*cdr.Encoder) error { return nil }

func (*MessageError) decode(d *cdr.Decoder) { d.Done("header") }
