package giopconn

import (
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// MessageError is a MessageError in version v and order o, or in the
// highest version when v cannot be encoded.
func MessageError(v giop.Version, o cdr.ByteOrder) []byte {
	b, err := giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: v, Order: o}})
	if err != nil {
		b, _ = giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: giop.Highest}})
	}
	return b
}

// closeConnection is a CloseConnection in version v and order o, or in
// GIOP 1.0 when v cannot be encoded.
func closeConnection(v giop.Version, o cdr.ByteOrder) []byte {
	b, err := giop.EncodeMessage(&giop.CloseConnection{Envelope: giop.Envelope{Version: v, Order: o}})
	if err != nil {
		b, _ = giop.EncodeMessage(&giop.CloseConnection{Envelope: giop.Envelope{Version: giop.V10}})
	}
	return b
}
