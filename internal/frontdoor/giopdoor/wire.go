package giopdoor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

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

// messageReader reads whole GIOP messages from a connection.
// Not safe for concurrent use.
type messageReader struct {
	nc net.Conn
	br *bufio.Reader
	// hdr is the buffer of the next header.
	hdr [giop.HeaderSize]byte
}

func newMessageReader(nc net.Conn) *messageReader {
	return &messageReader{nc: nc, br: bufio.NewReaderSize(nc, 4<<10)}
}

// errIdle says the connection stayed silent for the idle timeout before a
// message began.
var errIdle = errors.New("giopdoor: connection idle")

// read reads one message: it waits up to idle for the header to begin
// (errIdle when none does), then allows bodyTimeout for the rest. A zero
// idle or bodyTimeout leaves the connection's deadline as it is. Messages above maxSize are refused before
// their body is read. The returned bytes are a fresh buffer holding the
// header and the body.
func (r *messageReader) read(idle, bodyTimeout time.Duration, maxSize int) ([]byte, giop.Header, error) {
	if idle > 0 {
		_ = r.nc.SetReadDeadline(time.Now().Add(idle))
	}
	if _, err := r.br.Peek(1); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, giop.Header{}, errIdle
		}
		return nil, giop.Header{}, err
	}
	if bodyTimeout > 0 {
		_ = r.nc.SetReadDeadline(time.Now().Add(bodyTimeout))
	}
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return nil, giop.Header{}, fmt.Errorf("giopdoor: reading a message header: %w", err)
	}
	h, err := giop.Limits{MaxMessageSize: maxSize}.ParseHeader(r.hdr[:])
	if err != nil {
		v := h.Version
		if !v.Supported() {
			v = giop.Highest
		}
		return nil, h, &protocolError{version: v, order: h.Order, err: err}
	}
	msg := make([]byte, giop.HeaderSize+int(h.Size))
	copy(msg, r.hdr[:])
	if _, err := io.ReadFull(r.br, msg[giop.HeaderSize:]); err != nil {
		return nil, h, fmt.Errorf("giopdoor: reading a %v body of %d bytes: %w", h.Type, h.Size, err)
	}
	return msg, h, nil
}

// encode encodes m, header included.
func encode(m giop.Message) ([]byte, error) { return giop.EncodeMessage(m) }

// messageError is the MessageError for a protocol error.
func messageError(pe *protocolError) []byte {
	b, err := encode(&giop.MessageError{Envelope: giop.Envelope{Version: pe.version, Order: pe.order}})
	if err != nil {
		b, _ = encode(&giop.MessageError{Envelope: giop.Envelope{Version: giop.Highest}})
	}
	return b
}

// closeConnection is a CloseConnection in version v and order o.
func closeConnection(v giop.Version, o cdr.ByteOrder) []byte {
	b, err := encode(&giop.CloseConnection{Envelope: giop.Envelope{Version: v, Order: o}})
	if err != nil {
		b, _ = encode(&giop.CloseConnection{Envelope: giop.Envelope{Version: giop.V10}})
	}
	return b
}
