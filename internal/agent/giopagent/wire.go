package giopagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// readBufferSize is the size of each connection side's read buffer.
const readBufferSize = 32 << 10

// errProtocol wraps what a peer sent that breaks GIOP: the agent answers it
// with MessageError and closes the connection.
var errProtocol = errors.New("giopagent: protocol error")

// readMessage reads one whole message from r into buf, reusing its
// storage, and returns its header and bytes (header included). A
// malformed header is an error wrapping errProtocol and the codec's error;
// anything else is the reader's error.
func readMessage(r *bufio.Reader, lim giop.Limits, buf []byte) (giop.Header, []byte, error) {
	var hdr [giop.HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return giop.Header{}, buf[:0], err
	}
	h, err := lim.ParseHeader(hdr[:])
	if err != nil {
		return h, buf[:0], fmt.Errorf("%w: %w", errProtocol, err)
	}
	n := giop.HeaderSize + int(h.Size)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	copy(buf, hdr[:])
	if _, err := io.ReadFull(r, buf[giop.HeaderSize:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return h, buf, err
	}
	return h, buf, nil
}

// requestIDOf returns the request id of a decoded message that has one.
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
	case *giop.CancelRequest:
		return m.RequestID, true
	case *giop.Fragment:
		return m.RequestID, true
	}
	return 0, false
}
