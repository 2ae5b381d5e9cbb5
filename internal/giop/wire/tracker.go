package wire

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// Tracked is a message one peer is still sending in fragments, with what
// its user keeps about it.
type Tracked[T any] struct {
	Version giop.Version
	// ID is the request id (GIOP 1.2; in 1.1 what Open was given).
	ID   uint32
	Data T
}

// Tracker follows the messages one peer is sending in fragments (CORBA
// 3.x, GIOP chapter, "Fragment Message") without joining them: in GIOP
// 1.1 the fragments of a message follow it with nothing in between and
// carry no request id; in 1.2 they carry the request id and may interleave
// with other messages. Misuse is an error wrapping ErrFragment. The zero
// value is usable and tracks up to DefaultMaxOpen messages; not safe for
// concurrent use: each direction of a connection has its own.
type Tracker[T any] struct {
	// MaxOpen bounds the GIOP 1.2 messages open at once; DefaultMaxOpen
	// when zero.
	MaxOpen int
	v11     *Tracked[T]
	v12     map[uint32]*Tracked[T]
}

// DefaultMaxOpen is a Tracker's bound on GIOP 1.2 messages in fragments
// at once unless its MaxOpen says otherwise.
const DefaultMaxOpen = 256

// V11 is the GIOP 1.1 message in fragments, nil if none: anything but its
// next Fragment (or a CancelRequest) is misuse while there is one.
func (t *Tracker[T]) V11() *Tracked[T] { return t.v11 }

// Len is how many messages are open.
func (t *Tracker[T]) Len() int {
	n := len(t.v12)
	if t.v11 != nil {
		n++
	}
	return n
}

// Open records that message id of version v continues in fragments.
func (t *Tracker[T]) Open(v giop.Version, id uint32) (*Tracked[T], error) {
	m := &Tracked[T]{Version: v, ID: id}
	if v == giop.V11 {
		if t.v11 != nil {
			return nil, fmt.Errorf("%w: a GIOP 1.1 message started before the last one's fragments ended", ErrFragment)
		}
		t.v11 = m
		return m, nil
	}
	if _, dup := t.v12[id]; dup {
		return nil, fmt.Errorf("%w: request %d started again before its last fragment", ErrFragment, id)
	}
	maxOpen := t.MaxOpen
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpen
	}
	if len(t.v12) >= maxOpen {
		return nil, fmt.Errorf("%w: more than %d messages in fragments at once", ErrFragment, maxOpen)
	}
	if t.v12 == nil {
		t.v12 = make(map[uint32]*Tracked[T])
	}
	t.v12[id] = m
	return m, nil
}

// Next finds the message a Fragment with header h continues; id is the
// fragment header's request id (GIOP 1.2). last says it was the final
// fragment, in which case the message is no longer tracked.
func (t *Tracker[T]) Next(h giop.Header, id uint32) (m *Tracked[T], last bool, err error) {
	last = !h.MoreFragments
	if h.Version == giop.V11 {
		m = t.v11
		if m == nil {
			return nil, false, fmt.Errorf("%w: a GIOP 1.1 Fragment continues no message", ErrFragment)
		}
		if last {
			t.v11 = nil
		}
		return m, last, nil
	}
	if t.v11 != nil {
		return nil, false, fmt.Errorf("%w: a GIOP %v Fragment inside a fragmented GIOP 1.1 message", ErrFragment, h.Version)
	}
	m = t.v12[id]
	if m == nil {
		return nil, false, fmt.Errorf("%w: a GIOP %v Fragment for request %d, which continues no message", ErrFragment, h.Version, id)
	}
	if last {
		delete(t.v12, id)
	}
	return m, last, nil
}

// Cancel forgets message id, cancelled while its fragments were still
// coming, and returns it (nil if id was not open).
func (t *Tracker[T]) Cancel(id uint32) *Tracked[T] {
	if t.v11 != nil && t.v11.ID == id {
		m := t.v11
		t.v11 = nil
		return m
	}
	if m := t.v12[id]; m != nil {
		delete(t.v12, id)
		return m
	}
	return nil
}

// DropV11 forgets the GIOP 1.1 message in fragments, if any, and returns
// it.
func (t *Tracker[T]) DropV11() *Tracked[T] {
	m := t.v11
	t.v11 = nil
	return m
}

// Each calls fn with every open message.
func (t *Tracker[T]) Each(fn func(*Tracked[T])) {
	if t.v11 != nil {
		fn(t.v11)
	}
	for _, m := range t.v12 {
		fn(m)
	}
}
