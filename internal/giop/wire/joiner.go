package wire

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// JoinerOptions configure a Joiner. The zero value is usable.
type JoinerOptions struct {
	// MaxOpen bounds the GIOP 1.2 messages in pieces at once;
	// DefaultMaxOpen when zero.
	MaxOpen int
	// V11 joins GIOP 1.1 fragmented messages too; without it they are
	// refused (ErrFragment). See Joiner on their alignment.
	V11 bool
	// Budget, when set, is charged with every byte of the pieces held
	// (already read: taken at once, past its bound if need be, so that
	// the connections' next reads wait), and given them back when the
	// message is whole or dropped.
	Budget *Budget
}

// Joiner joins fragmented messages (CORBA 3.x, GIOP chapter, "Fragment
// Message") back into whole ones, so that what follows only sees
// unfragmented messages. The joined message is the first one's bytes
// followed by every fragment's data, with the more-fragments flag cleared
// and message_size updated. In GIOP 1.2 every message but the last of a
// fragmented one has a total length that is a multiple of 8 and fragment
// data starts 8-aligned after the 16-byte fragment header, so the joined
// data keeps its alignment relative to the message start. GIOP 1.1
// fragment data is aligned relative to its own fragment (starting at
// offset 12), so a join keeps alignment only where the bytes before it are
// 4 modulo 8; Add reports other joins as misaligned, and whoever decodes
// or forwards the body must refuse them. The bytes held for all open
// messages together never exceed the size limit. Misuse is an error
// wrapping ErrFragment, a message beyond the size limit one wrapping
// giop.ErrTooLarge. Not safe for concurrent use.
type Joiner struct {
	opts JoinerOptions
	open Tracker[*piece]
	held int // bytes held in pieces, also taken from opts.Budget
}

type piece struct {
	buf        []byte
	misaligned bool
}

// NewJoiner returns a Joiner.
func NewJoiner(opts JoinerOptions) *Joiner {
	return &Joiner{opts: opts, open: Tracker[*piece]{MaxOpen: opts.MaxOpen}}
}

// Add feeds one message as read, its header h and bytes raw (header
// included; the Joiner keeps raw when it is a piece). It returns raw itself
// when it is neither fragmented nor a Fragment, nil when more fragments
// are awaited, and the joined message when raw ends one; misaligned is set
// on a joined message whose body alignment could not be kept. maxSize
// bounds a joined message and all pieces held together. A CancelRequest
// ends a GIOP 1.1 message in pieces (its client sends no more of it); see
// Cancel for GIOP 1.2.
func (j *Joiner) Add(h giop.Header, raw []byte, maxSize int) (msg []byte, misaligned bool, err error) {
	if h.Type != giop.MsgFragment {
		if j.open.V11() != nil {
			if h.Type != giop.MsgCancelRequest {
				return nil, false, fmt.Errorf("%w: a %v arrived while a GIOP 1.1 fragmented message was incomplete", ErrFragment, h.Type)
			}
			j.drop(j.open.DropV11())
		}
		if !h.MoreFragments {
			return raw, false, nil
		}
		return nil, false, j.start(h, raw, maxSize)
	}
	var id uint32
	data := raw[giop.HeaderSize:]
	if h.Version == giop.V12 {
		if h.Size < 4 {
			return nil, false, fmt.Errorf("%w: a Fragment of %d bytes has no request_id", ErrFragment, h.Size)
		}
		id = h.Order.Uint32(data)
		data = data[4:]
	}
	t, last, err := j.open.Next(h, id)
	if err != nil {
		return nil, false, err
	}
	p := t.Data
	if h.Version == giop.V11 {
		p.misaligned = p.misaligned || len(p.buf)%8 != 4
	} else if h.MoreFragments && len(data)%8 != 0 {
		p.misaligned = true
	}
	if len(p.buf)+len(data)-giop.HeaderSize > maxSize {
		j.forget(t, last)
		return nil, false, fmt.Errorf("%w: request %d joined from fragments exceeds %d bytes", giop.ErrTooLarge, t.ID, maxSize)
	}
	if err := j.reserve(len(data), maxSize); err != nil {
		j.forget(t, last)
		return nil, false, err
	}
	p.buf = append(p.buf, data...)
	if !last {
		return nil, false, nil
	}
	j.release(len(p.buf))
	joined := p.buf
	order := cdr.BigEndian
	if joined[6]&0x01 != 0 {
		order = cdr.LittleEndian
	}
	joined[6] &^= 0x02 // more fragments
	order.PutUint32(joined[8:], uint32(len(joined)-giop.HeaderSize))
	return joined, p.misaligned, nil
}

// start opens a message whose first piece is raw.
func (j *Joiner) start(h giop.Header, raw []byte, maxSize int) error {
	var id uint32
	switch {
	case h.Version == giop.V11 && !j.opts.V11:
		return fmt.Errorf("%w: a fragmented %v message in GIOP %v (only GIOP 1.2 fragments are joined)", ErrFragment, h.Type, h.Version)
	case h.Version == giop.V12:
		if h.Size < 4 {
			return fmt.Errorf("%w: a fragmented %v message of %d bytes has no request_id", ErrFragment, h.Type, h.Size)
		}
		id = h.Order.Uint32(raw[giop.HeaderSize:])
	}
	t, err := j.open.Open(h.Version, id)
	if err != nil {
		return err
	}
	if err := j.reserve(len(raw), maxSize); err != nil {
		j.forget(t, false)
		return err
	}
	t.Data = &piece{buf: raw, misaligned: h.Version == giop.V12 && len(raw)%8 != 0}
	return nil
}

// Cancel drops the GIOP 1.2 message of request id in pieces, if any: a
// client may cancel a request before its last fragment, and sends no more.
func (j *Joiner) Cancel(id uint32) {
	j.drop(j.open.Cancel(id))
}

// Close drops every message in pieces and gives their bytes back to the
// Budget.
func (j *Joiner) Close() {
	j.open.Each(func(t *Tracked[*piece]) { j.forget(t, true) })
	j.open = Tracker[*piece]{MaxOpen: j.opts.MaxOpen}
}

// forget drops t's bytes; when it is still open (not its last fragment),
// it is dropped from the tracker too.
func (j *Joiner) forget(t *Tracked[*piece], closed bool) {
	if !closed {
		j.open.Cancel(t.ID)
	}
	j.drop(t)
}

func (j *Joiner) drop(t *Tracked[*piece]) {
	if t != nil && t.Data != nil {
		j.release(len(t.Data.buf))
		t.Data = nil
	}
}

func (j *Joiner) reserve(n, maxSize int) error {
	if j.held+n > maxSize {
		return fmt.Errorf("%w: messages in fragments hold more than %d bytes", giop.ErrTooLarge, maxSize)
	}
	j.opts.Budget.take(n)
	j.held += n
	return nil
}

func (j *Joiner) release(n int) {
	j.held -= n
	j.opts.Budget.release(n)
}
