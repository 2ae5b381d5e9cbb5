package giop

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// Request, Reply and LocateReply keep what follows their header as raw bytes
// with the offset it had in the message, because CDR alignment inside it is
// relative to the message start (CORBA 3.x, GIOP chapter, "CDR Transfer
// Syntax" › "Alignment"). GIOP 1.2 Request and Reply bodies start on an
// 8-byte boundary ("Request Body", "Reply Body"); LocateReply bodies are not
// re-aligned in any version, and 1.0/1.1 bodies follow the header directly.

// decodeBody takes the rest of the message as the body and returns it with
// its offset. With align8, the padding before it is skipped, and if the
// message ends in (or inside) that padding the body is empty but its offset
// is the aligned one, so that re-encoding pads the same way. An empty body
// without padding has offset 0, like a message built without a body.
func decodeBody(d *cdr.Decoder, align8 bool) (body []byte, offset int) {
	if d.Remaining() == 0 {
		return nil, 0
	}
	offset = d.Offset()
	if align8 {
		pad := cdr.Padding(offset, 8)
		d.Octets("body alignment padding", min(pad, d.Remaining()))
		offset += pad
	}
	return d.Rest(), offset
}

// encodeBody writes body, which was encoded for message offset bodyOffset.
// With align8 it pads to 8 first, if there is a body or bodyOffset says the
// sender padded an empty one.
func encodeBody(e *cdr.Encoder, body []byte, bodyOffset int, align8 bool) error {
	if bodyOffset < 0 {
		return invalid("negative BodyOffset %d", bodyOffset)
	}
	if align8 && (len(body) > 0 || bodyOffset > e.Offset()) {
		e.Align(8)
	}
	if len(body) > 0 && bodyOffset%8 != e.Offset()%8 {
		return &encodeError{ErrBodyMisaligned, fmt.Sprintf("body encoded for offset %d would start at %d", bodyOffset, e.Offset())}
	}
	e.Raw(body)
	return nil
}

// bodyStart returns where m's body will start when m is encoded as it is:
// its header is encoded with an empty body to find out.
func bodyStart(m Message, align8 bool) int {
	e := cdr.NewEncoder(make([]byte, 0, 128), m.envelope().Order, 0)
	_ = encodeMessage(e, m) // if m is invalid, so is anything encoded with it
	off := e.Offset()
	if align8 {
		off += cdr.Padding(off, 8)
	}
	return off
}

// buildBody runs write on an encoder positioned at offset in m's byte order
// and returns the bytes written (nil if none).
func buildBody(order cdr.ByteOrder, offset int, write func(e *cdr.Encoder)) []byte {
	e := cdr.NewEncoder(nil, order, offset)
	write(e)
	if e.Len() == 0 {
		return nil
	}
	return e.Bytes()
}

// bodyDecoder returns a decoder for a body encoded for message offset
// offset. A negative offset, which only a hand-built message can have,
// gives a decoder that fails at once.
func bodyDecoder(body []byte, order cdr.ByteOrder, offset int) *cdr.Decoder {
	if offset < 0 {
		d := cdr.NewDecoder(nil, order, 0)
		d.Fail("body", 0, cdr.ErrInvalid, "negative BodyOffset %d", offset)
		return d
	}
	return cdr.NewDecoder(body, order, offset)
}
