package giopdoor

import (
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// errProtocol marks what the peer got wrong: the connection is answered
// MessageError and closed.
var errProtocol = errors.New("giopdoor: protocol error")

// protocolError is a GIOP error of the peer, answered with MessageError in
// version (Highest when the peer's is unsupported) and order.
type protocolError struct {
	version giop.Version
	order   cdr.ByteOrder
	err     error
}

func (e *protocolError) Error() string { return e.err.Error() }
func (e *protocolError) Unwrap() []error {
	return []error{errProtocol, e.err}
}

// encode encodes m, header included.
func encode(m giop.Message) ([]byte, error) { return giop.EncodeMessage(m) }
