package wire

import "github.com/fulcrum-lb/fulcrum/internal/giop"

// RequestID returns the request id a decoded message carries: that of a
// Request, Reply, CancelRequest, LocateRequest or LocateReply, and of a
// GIOP 1.2 Fragment (whose header names the message it continues). The
// other messages (CloseConnection, MessageError, a GIOP 1.1 Fragment)
// carry none: ok is false.
func RequestID(m giop.Message) (id uint32, ok bool) {
	switch m := m.(type) {
	case *giop.Request:
		return m.RequestID, true
	case *giop.Reply:
		return m.RequestID, true
	case *giop.CancelRequest:
		return m.RequestID, true
	case *giop.LocateRequest:
		return m.RequestID, true
	case *giop.LocateReply:
		return m.RequestID, true
	case *giop.Fragment:
		return m.RequestID, m.Version == giop.V12
	}
	return 0, false
}
