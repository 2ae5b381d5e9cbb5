package giopagent

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// maxOpenFragmented bounds how many GIOP 1.2 messages one peer may have
// half-sent in fragments at once on one connection.
const maxOpenFragmented = 256

// fragmented is a message whose Fragment messages are still to come.
type fragmented struct {
	version giop.Version
	id      uint32
	// shed, on the client side, is the Request being answered with
	// LOCATION_FORWARD once its last fragment is in; none of its fragments
	// go upstream.
	shed *giop.Request
	// call, on the target side, says the reply ends a measured call when
	// its last fragment has passed.
	call bool
}

// fragments tracks the messages one peer is sending in fragments (CORBA
// 3.x, GIOP chapter, "Fragment Message"). In GIOP 1.1 the fragments of a
// message follow it with nothing in between and carry no request id; in 1.2
// they carry the request id and may interleave with other messages. Not
// safe for concurrent use: each direction of a connection has its own.
type fragments struct {
	v11 *fragmented
	v12 map[uint32]*fragmented
}

// inV11 reports whether a GIOP 1.1 message is half sent, so that anything
// but its next Fragment is misuse.
func (f *fragments) inV11() bool { return f.v11 != nil }

// open records that message id of version v continues in fragments.
func (f *fragments) open(v giop.Version, id uint32) (*fragmented, error) {
	m := &fragmented{version: v, id: id}
	if v == giop.V11 {
		if f.v11 != nil {
			return nil, fmt.Errorf("%w: a GIOP 1.1 message started before the last one's fragments ended", errProtocol)
		}
		f.v11 = m
		return m, nil
	}
	if _, dup := f.v12[id]; dup {
		return nil, fmt.Errorf("%w: request id %d is already continuing in fragments", errProtocol, id)
	}
	if len(f.v12) >= maxOpenFragmented {
		return nil, fmt.Errorf("%w: more than %d messages continuing in fragments at once", errProtocol, maxOpenFragmented)
	}
	if f.v12 == nil {
		f.v12 = make(map[uint32]*fragmented)
	}
	f.v12[id] = m
	return m, nil
}

// next finds the message a Fragment continues; its fragment header is h and
// its decoded form frag. last says it was the final fragment, in which case
// the message is no longer tracked.
func (f *fragments) next(h giop.Header, frag *giop.Fragment) (m *fragmented, last bool, err error) {
	if h.Version == giop.V11 {
		m = f.v11
		if m == nil {
			return nil, false, fmt.Errorf("%w: a GIOP 1.1 Fragment continues no message", errProtocol)
		}
		if !h.MoreFragments {
			f.v11 = nil
		}
		return m, !h.MoreFragments, nil
	}
	if f.v11 != nil {
		return nil, false, fmt.Errorf("%w: a GIOP %v Fragment inside a fragmented GIOP 1.1 message", errProtocol, h.Version)
	}
	m = f.v12[frag.RequestID]
	if m == nil {
		return nil, false, fmt.Errorf("%w: a GIOP %v Fragment for request id %d, which continues no message", errProtocol, h.Version, frag.RequestID)
	}
	if !h.MoreFragments {
		delete(f.v12, frag.RequestID)
	}
	return m, !h.MoreFragments, nil
}

// cancel forgets a message the client cancelled while its fragments were
// still coming, and returns it (nil if id was not continuing).
func (f *fragments) cancel(id uint32) *fragmented {
	if f.v11 != nil && f.v11.id == id {
		m := f.v11
		f.v11 = nil
		return m
	}
	if m := f.v12[id]; m != nil {
		delete(f.v12, id)
		return m
	}
	return nil
}
