package giopdoor

import (
	"fmt"
	"net"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// maxPendingFragmented bounds the fragmented messages (GIOP 1.2) one
// connection may have open at once.
const maxPendingFragmented = 64

// msgReader reads whole GIOP messages from one connection with package
// wire's framing: it waits up to the idle timeout for a message to begin,
// reads it within the request timeout as its bytes arrive, and joins
// fragmented messages, GIOP 1.1 and 1.2 (see wire.Joiner on the alignment
// of GIOP 1.1 joins). Not safe for concurrent use.
type msgReader struct {
	f *wire.Framer
	j *wire.Joiner
}

// newMsgReader reads nc. A budget, when not nil, bounds what the half-read
// messages of every connection sharing it hold together; closing cancel
// ends a wait for it.
func newMsgReader(nc net.Conn, budget *wire.Budget, cancel <-chan struct{}) *msgReader {
	return &msgReader{
		f: wire.NewFramer(nc, wire.FramerOptions{Budget: budget, Cancel: cancel}),
		j: wire.NewJoiner(wire.JoinerOptions{MaxOpen: maxPendingFragmented, V11: true, Budget: budget}),
	}
}

// next reads one message: it waits up to idle for it to begin
// (wire.ErrIdle when none does), then allows bodyTimeout for the rest; a
// zero idle or bodyTimeout leaves the connection's deadline as it is.
// Messages above maxSize are refused from their header. It returns the
// whole message decoded with its bytes (a fresh buffer) and whether its
// body lost its alignment in joining, or a nil message while more
// fragments are awaited; h is the header of the message read. What the
// peer got wrong is a *protocolError; other errors are the connection's.
func (r *msgReader) next(idle, bodyTimeout time.Duration, maxSize int) (m giop.Message, raw []byte, misaligned bool, h giop.Header, err error) {
	if err := r.f.Wait(idle); err != nil {
		return nil, nil, false, h, err
	}
	var deadline time.Time
	if bodyTimeout > 0 {
		deadline = time.Now().Add(bodyTimeout)
	}
	lim := giop.Limits{MaxMessageSize: maxSize}
	r.f.SetLimits(lim)
	h, raw, err = r.f.Read(nil, deadline)
	if err != nil {
		if wire.IsProtocolError(err) {
			return nil, nil, false, h, peerError(h, err)
		}
		return nil, nil, false, h, fmt.Errorf("giopdoor: reading a message: %w", err)
	}
	raw, misaligned, err = r.j.Add(h, raw, maxSize)
	if err != nil {
		return nil, nil, false, h, peerError(h, err)
	}
	if raw == nil {
		return nil, nil, false, h, nil
	}
	m, err = lim.DecodeMessage(raw)
	if err != nil {
		return nil, nil, false, h, peerError(h, err)
	}
	if cr, ok := m.(*giop.CancelRequest); ok {
		r.j.Cancel(cr.RequestID) // its fragments, if any, come no more
	}
	return m, raw, misaligned, h, nil
}

// close gives back what the connection's fragments held.
func (r *msgReader) close() { r.j.Close() }

// peerError is err as a protocolError in h's version (Highest when it is
// not supported) and order.
func peerError(h giop.Header, err error) *protocolError {
	v := h.Version
	if !v.Supported() {
		v = giop.Highest
	}
	return &protocolError{version: v, order: h.Order, err: err}
}
