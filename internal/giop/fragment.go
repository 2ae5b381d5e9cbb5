package giop

import "github.com/fulcrum-lb/fulcrum/internal/giop/cdr"

// Fragment continues a message sent with the more-fragments flag (CORBA
// 3.x, GIOP chapter, "Fragment Message"), GIOP 1.1 and later. In 1.2 it
// starts with the request id of the message it continues
// (GIOP::FragmentHeader_1_2); the rest is the next piece of that message,
// kept raw.
//
// How the pieces align differs: in 1.1 a fragment's data aligns relative to
// its own position in the fragment, in 1.2 the 16-byte fragment header keeps
// the data 8-aligned. The codec only frames fragments; it does not join them.
type Fragment struct {
	Envelope
	// RequestID is the request_id of the fragment header, GIOP 1.2 only.
	RequestID uint32
	// Body is the fragment's data.
	Body []byte
}

// Type returns MsgFragment.
func (*Fragment) Type() MsgType { return MsgFragment }

func (f *Fragment) encode(e *cdr.Encoder) error {
	if f.Version.atLeast(2) {
		e.ULong(f.RequestID)
	} else if f.RequestID != 0 {
		return invalid("a fragment header with a request_id needs GIOP 1.2")
	}
	e.Raw(f.Body)
	return nil
}

func (f *Fragment) decode(d *cdr.Decoder) {
	if f.Version.atLeast(2) {
		f.RequestID = d.ULong("request_id")
	}
	f.Body = d.Rest()
}
