package giopdoor

import (
	"encoding/binary"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// maxPendingFragmented bounds the fragmented messages (GIOP 1.2) one
// connection may have open at once.
const maxPendingFragmented = 64

// assembler joins fragmented messages (CORBA 3.x, GIOP chapter,
// "Fragment Message") back into whole ones, so that the rest of the front
// door only sees unfragmented messages. GIOP 1.1 has one fragmented
// message open at a time per connection and its fragments carry no request
// id; GIOP 1.2 fragments name their request and may interleave. The
// joined message is the first one's bytes followed by every fragment's
// data, with the more-fragments flag cleared and message_size updated. In
// GIOP 1.2 every message but the last of a fragmented one has a total
// length that is a multiple of 8 and fragment data starts 8-aligned after
// the 16-byte fragment header, so the joined data keeps its alignment
// relative to the message start. GIOP 1.1 fragment data is aligned relative
// to its own fragment (starting at offset 12), so a join keeps alignment
// only where the bytes before it are 4 modulo 8; add reports other joins as
// misaligned, and a front door that forwards the body must refuse them.
// The bytes held for all open messages together never exceed the size
// limit. Not safe for concurrent use.
type assembler struct {
	open  map[uint32]*partial // GIOP 1.2, by request id
	open1 *partial            // GIOP 1.1
	held  int
}

type partial struct {
	version    giop.Version
	buf        []byte
	misaligned bool
}

// add feeds one decoded message and its bytes. It returns the message to
// act on: m itself when it is not fragmented, the joined message when m
// ends one, nil when more fragments are awaited; misaligned is set on a
// joined message whose body alignment could not be kept (see assembler).
// Misuse (a fragment of nothing, a version change, a 1.1 fragmented message
// interrupted, too many bytes) is a *protocolError.
func (a *assembler) add(m giop.Message, raw []byte, maxSize int) (out giop.Message, joined []byte, misaligned bool, err error) {
	env := giop.EnvelopeOf(m)
	misuse := func(format string, args ...any) error {
		return &protocolError{version: env.Version, order: env.Order,
			err: fmt.Errorf("%w: fragment misuse: %s", giop.ErrMalformed, fmt.Sprintf(format, args...))}
	}
	f, isFrag := m.(*giop.Fragment)
	if a.open1 != nil && !isFrag {
		if _, cancel := m.(*giop.CancelRequest); !cancel {
			return nil, nil, false, misuse("a %v arrived while a GIOP 1.1 fragmented message was incomplete", m.Type())
		}
		a.held -= len(a.open1.buf)
		a.open1 = nil
	}
	if !isFrag {
		if !env.MoreFragments {
			return m, raw, false, nil
		}
		id, ok := requestIDOf(m)
		if !ok {
			return nil, nil, false, misuse("a %v cannot be fragmented", m.Type())
		}
		if err := a.reserve(len(raw), maxSize); err != nil {
			return nil, nil, false, misuse("%v", err)
		}
		p := &partial{version: env.Version, buf: raw}
		if env.Version == giop.V11 {
			a.open1 = p
			return nil, nil, false, nil
		}
		if _, dup := a.open[id]; dup {
			a.held -= len(raw)
			return nil, nil, false, misuse("request %d started again before its last fragment", id)
		}
		if len(a.open) >= maxPendingFragmented {
			a.held -= len(raw)
			return nil, nil, false, misuse("more than %d fragmented messages open", maxPendingFragmented)
		}
		p.misaligned = len(raw)%8 != 0
		if a.open == nil {
			a.open = map[uint32]*partial{}
		}
		a.open[id] = p
		return nil, nil, false, nil
	}

	var p *partial
	if env.Version == giop.V11 {
		p = a.open1
	} else {
		p = a.open[f.RequestID]
	}
	if p == nil {
		return nil, nil, false, misuse("a GIOP %v fragment (request %d) continues no message", env.Version, f.RequestID)
	}
	if p.version != env.Version {
		return nil, nil, false, misuse("a GIOP %v fragment continues a GIOP %v message", env.Version, p.version)
	}
	if env.Version == giop.V11 {
		p.misaligned = p.misaligned || len(p.buf)%8 != 4
	} else if env.MoreFragments && len(f.Body)%8 != 0 {
		p.misaligned = true
	}
	if err := a.reserve(len(f.Body), maxSize); err != nil {
		return nil, nil, false, misuse("%v", err)
	}
	p.buf = append(p.buf, f.Body...)
	if len(p.buf)-giop.HeaderSize > maxSize {
		return nil, nil, false, misuse("the joined message exceeds %d bytes", maxSize)
	}
	if env.MoreFragments {
		return nil, nil, false, nil
	}
	if env.Version == giop.V11 {
		a.open1 = nil
	} else {
		delete(a.open, f.RequestID)
	}
	a.held -= len(p.buf)
	joined = p.buf
	joined[6] &^= 0x02 // more fragments
	order := binary.ByteOrder(binary.BigEndian)
	if joined[6]&0x01 != 0 {
		order = binary.LittleEndian
	}
	order.PutUint32(joined[8:12], uint32(len(joined)-giop.HeaderSize))
	whole, err := giop.Limits{MaxMessageSize: maxSize}.DecodeMessage(joined)
	if err != nil {
		return nil, nil, false, &protocolError{version: env.Version, order: env.Order, err: err}
	}
	return whole, joined, p.misaligned, nil
}

func (a *assembler) reserve(n, maxSize int) error {
	if a.held+n > maxSize {
		return fmt.Errorf("fragmented messages held open exceed %d bytes", maxSize)
	}
	a.held += n
	return nil
}

// requestIDOf is the request id of a message that may be fragmented.
func requestIDOf(m giop.Message) (uint32, bool) {
	switch m := m.(type) {
	case *giop.Request:
		return m.RequestID, true
	case *giop.Reply:
		return m.RequestID, true
	case *giop.LocateRequest:
		return m.RequestID, true
	case *giop.LocateReply:
		return m.RequestID, true
	}
	return 0, false
}

// orderOf is a message's byte order as a cdr.ByteOrder.
func orderOf(m giop.Message) cdr.ByteOrder { return giop.EnvelopeOf(m).Order }

// cancel drops the open fragmented message of request id, if any: a client
// may cancel a request before its last fragment, and sends no more.
func (a *assembler) cancel(id uint32) {
	if p := a.open[id]; p != nil {
		a.held -= len(p.buf)
		delete(a.open, id)
	}
}
