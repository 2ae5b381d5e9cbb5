package giopdeliver_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Entries in every GIOP version and byte order, addressed to the group's
// key, reach the servant under its own key; each reply comes back whole
// with the entry's request id, in the entry's version and byte order; a
// oneway entry runs before the next one is delivered.
func TestDeliverInOrder(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := &backend.Counter{}
	ref := startCounter(t, c)
	d := newDeliverer(t, ref.String())
	want := int64(0)
	pos := uint64(0)
	for _, v := range []giop.Version{giop.V10, giop.V11, giop.V12} {
		for _, o := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			pos++
			want++
			id := uint32(1000 + pos)
			rr, err := d.Deliver(ctx, pos, entry(t, v, o, id, giop.FlagsTwoway, "group", backend.OpIncrement))
			if err != nil {
				t.Fatalf("%v %v: %v", v, o, err)
			}
			rep := decodeReply(t, rr.Body)
			if rr.Position != pos || rep.RequestID != id || rep.Version != v || rep.Order != o {
				t.Fatalf("%v %v: position %d, reply id %d %v %v; want %d, %d", v, o, rr.Position, rep.RequestID, rep.Version, rep.Order, pos, id)
			}
			if got := longLong(t, rep); got != want {
				t.Fatalf("%v %v: increment returned %d, want %d", v, o, got, want)
			}
			// A oneway increment has run once Deliver returns.
			pos++
			want++
			if _, err := d.Deliver(ctx, pos, entry(t, v, o, id+1, giop.FlagsOneway, "group", backend.OpIncrement)); err != nil {
				t.Fatalf("%v %v oneway: %v", v, o, err)
			}
			if got := c.State().Value; got != want {
				t.Fatalf("%v %v: value %d after a oneway increment, want %d", v, o, got, want)
			}
		}
	}
}

// Two replicas given the same entries return the same reply bytes.
func TestDeliverRepliesAgree(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a := newDeliverer(t, startCounter(t, &backend.Counter{}).String())
	b := newDeliverer(t, startCounter(t, &backend.Counter{}).String())
	// b's connection counter is ahead of a's.
	if _, err := b.Deliver(ctx, 1, entry(t, giop.V12, cdr.BigEndian, 9, giop.FlagsTwoway, "g", backend.OpValue)); err != nil {
		t.Fatal(err)
	}
	for pos := uint64(2); pos < 5; pos++ {
		e := entry(t, giop.V12, cdr.LittleEndian, uint32(pos*7), giop.FlagsTwoway, "g", backend.OpIncrement)
		ra, err := a.Deliver(ctx, pos, e)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Deliver(ctx, pos, e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ra.Body, rb.Body) {
			t.Fatalf("position %d: replies differ:\n%x\n%x", pos, ra.Body, rb.Body)
		}
	}
}

// Entries that are not whole GIOP Requests are errors naming the
// position; a servant that is gone is an error.
func TestDeliverRefuses(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := newDeliverer(t, startCounter(t, &backend.Counter{}).String())
	reply, _ := giop.EncodeMessage(&giop.Reply{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 1})
	tests := []struct {
		name string
		req  *protocol.OrderedRequest
		want string
	}{
		{"nil", nil, `entry 7: kind "", want "giop"`},
		{"http", &protocol.OrderedRequest{Kind: protocol.KindHTTP}, `entry 7: kind "http"`},
		{"garbage", &protocol.OrderedRequest{Kind: protocol.KindGIOP, Body: []byte("GIOP garbage")}, "entry 7: giop:"},
		{"a reply", &protocol.OrderedRequest{Kind: protocol.KindGIOP, Body: reply}, "entry 7: a GIOP Reply"},
	}
	for _, tt := range tests {
		_, err := d.Deliver(ctx, 7, tt.req)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	ln := listen(t)
	dead := fmt.Sprintf("corbaloc:iiop:1.2@127.0.0.1:%d/Counter", port(ln))
	ln.Close()
	gone := newDeliverer(t, dead)
	if _, err := gone.Deliver(ctx, 1, entry(t, giop.V12, 0, 1, giop.FlagsTwoway, "g", backend.OpIncrement)); err == nil || !strings.Contains(err.Error(), "entry 1") {
		t.Fatalf("servant gone: err = %v", err)
	}
	_ = gone.Close()
	if _, err := gone.Deliver(ctx, 2, entry(t, giop.V12, 0, 1, giop.FlagsTwoway, "g", backend.OpIncrement)); !errors.Is(err, giopdeliver.ErrClosed) {
		t.Fatalf("after Close: err = %v, want ErrClosed", err)
	}
	if _, err := giopdeliver.New("http://x", giopdeliver.Options{}); err == nil || !strings.Contains(err.Error(), `target "http://x"`) {
		t.Fatalf("New(http://x) = %v", err)
	}
}
