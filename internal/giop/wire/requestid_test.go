package wire_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// RequestID covers every message type that carries a request id, the
// CancelRequest and the GIOP 1.2 Fragment included.
func TestRequestID(t *testing.T) {
	t.Parallel()
	v12 := giop.Envelope{Version: giop.V12}
	cases := []struct {
		name   string
		m      giop.Message
		id     uint32
		hasOne bool
	}{
		{"Request", &giop.Request{Envelope: v12, RequestID: 1}, 1, true},
		{"Reply", &giop.Reply{Envelope: v12, RequestID: 2}, 2, true},
		{"CancelRequest", &giop.CancelRequest{Envelope: v12, RequestID: 3}, 3, true},
		{"LocateRequest", &giop.LocateRequest{Envelope: v12, RequestID: 4}, 4, true},
		{"LocateReply", &giop.LocateReply{Envelope: v12, RequestID: 5}, 5, true},
		{"Fragment 1.2", &giop.Fragment{Envelope: v12, RequestID: 6}, 6, true},
		{"Fragment 1.1", &giop.Fragment{Envelope: giop.Envelope{Version: giop.V11}}, 0, false},
		{"CloseConnection", &giop.CloseConnection{Envelope: v12}, 0, false},
		{"MessageError", &giop.MessageError{Envelope: v12}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id, ok := wire.RequestID(c.m)
			if id != c.id || ok != c.hasOne {
				t.Errorf("RequestID = %d, %v; want %d, %v", id, ok, c.id, c.hasOne)
			}
		})
	}
}
