package giopbridge_test

import (
	"encoding/binary"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
)

// A GIOP 1.2 request sent in two fragments is joined and ordered whole.
func TestFragmentedRequestIsJoined(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{replicas: 1})
	c := r.dial(t)
	req := request(giop.V12, cdr.BigEndian, 11, groupKey, giop.OpIsA)
	req.SetBody(func(e *cdr.Encoder) { e.String("IDL:omg.org/FT/Checkpointable:1.0") })
	b, err := giop.EncodeMessage(req)
	if err != nil {
		t.Fatal(err)
	}
	cut := req.BodyOffset + 8
	first := append([]byte(nil), b[:cut]...)
	first[6] |= 0x02 // more fragments
	binary.BigEndian.PutUint32(first[8:], uint32(cut-giop.HeaderSize))
	if _, err := c.nc.Write(first); err != nil {
		t.Fatal(err)
	}
	c.send(&giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 11, Body: b[cut:]})
	rep := c.reply()
	if ok, err := rep.BooleanResult(); rep.RequestID != 11 || err != nil || !ok {
		t.Fatalf("fragmented _is_a: id %d, %v, %v; want 11, true", rep.RequestID, ok, err)
	}
}

// GIOP 1.0 and 1.1 requests with arguments keep their alignment through
// the bridge (which replaces a client's time/seed context of any size with
// its own) and the agent (which replaces the group's key with the
// servant's): _is_a's string argument reaches the servant intact.
func TestArgumentsKeepTheirAlignment(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{replicas: 1})
	c := r.dial(t)
	id := uint32(0)
	for _, v := range []giop.Version{giop.V10, giop.V11} {
		for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			for size := range 8 {
				id++
				req := request(v, o, id, groupKey, giop.OpIsA, giop.ServiceContext{ID: ordered.ServiceTimeSeed, Data: make([]byte, size)})
				req.SetBody(func(e *cdr.Encoder) { e.String("IDL:omg.org/FT/Checkpointable:1.0") })
				c.send(req)
				rep := c.reply()
				if ok, err := rep.BooleanResult(); rep.RequestID != id || err != nil || !ok {
					t.Fatalf("%v %v, client context of %d bytes: id %d, %v, %v; want %d, true", v, o, size, rep.RequestID, ok, err, id)
				}
			}
		}
	}
}
