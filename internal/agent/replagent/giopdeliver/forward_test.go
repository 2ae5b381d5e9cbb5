package giopdeliver_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// scripted is a GIOP server on a real socket that answers each request
// with what answer returns for it (conn counts the connections from 1; nil:
// no answer).
type scripted struct {
	ln       net.Listener
	requests atomic.Int32
}

func startScripted(t *testing.T, answer func(conn int, req *giop.Request) giop.Message) *scripted {
	t.Helper()
	s := &scripted{ln: listen(t)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for n := 1; ; n++ {
			nc, err := s.ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() {
				defer nc.Close()
				r, w := wire.NewReader(nc, giop.Limits{}), wire.NewWriter(nc)
				for {
					b, err := r.Next()
					if err != nil {
						return
					}
					m, err := giop.DecodeMessage(b)
					if err != nil {
						return
					}
					req, ok := m.(*giop.Request)
					if !ok {
						continue
					}
					s.requests.Add(1)
					out := answer(n, req)
					if out == nil {
						continue
					}
					if err := w.Write(out); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		s.ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func (s *scripted) ref(key string) ior.IOR {
	return ior.IOR{Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "127.0.0.1", Port: port(s.ln), ObjectKey: []byte(key)}}}
}

// A LOCATION_FORWARD is followed once, and the forwarded reference is used
// from then on; a second forward within one call is an error.
func TestDeliverFollowsForwardOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := &backend.Counter{}
	counter := startCounter(t, c)
	fwd := startScripted(t, func(_ int, req *giop.Request) giop.Message {
		rep := giop.ReplyTo(req, giop.StatusLocationForward)
		rep.SetForward(counter, false)
		return rep
	})
	d := newDeliverer(t, fwd.ref("Counter").String())
	for pos := uint64(1); pos <= 3; pos++ {
		rr, err := d.Deliver(ctx, pos, entry(t, giop.V12, cdr.BigEndian, 77, giop.FlagsTwoway, "g", backend.OpIncrement))
		if err != nil {
			t.Fatal(err)
		}
		if got := longLong(t, decodeReply(t, rr.Body)); got != int64(pos) {
			t.Fatalf("increment %d returned %d", pos, got)
		}
	}
	if n := fwd.requests.Load(); n != 1 {
		t.Fatalf("the forwarder saw %d requests, want 1", n)
	}

	var loop *scripted
	loop = startScripted(t, func(_ int, req *giop.Request) giop.Message {
		rep := giop.ReplyTo(req, giop.StatusLocationForward)
		rep.SetForward(loop.ref("again"), false)
		return rep
	})
	dl := newDeliverer(t, loop.ref("x").String())
	if _, err := dl.Deliver(ctx, 9, entry(t, giop.V12, cdr.BigEndian, 1, giop.FlagsTwoway, "g", backend.OpIncrement)); err == nil || !strings.Contains(err.Error(), "forwarded a second time") {
		t.Fatalf("forward loop: err = %v", err)
	}
}

// A CloseConnection instead of the reply means the request did not run:
// it is sent again on a new connection, once.
func TestDeliverResendsAfterCloseConnection(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := startScripted(t, func(conn int, req *giop.Request) giop.Message {
		if conn == 1 {
			return &giop.CloseConnection{Envelope: giop.Envelope{Version: giop.V12}}
		}
		rep := giop.ReplyTo(req, giop.StatusNoException)
		rep.SetBody(func(e *cdr.Encoder) { e.LongLong(42) })
		return rep
	})
	d := newDeliverer(t, s.ref("k").String())
	rr, err := d.Deliver(ctx, 1, entry(t, giop.V12, cdr.BigEndian, 5, giop.FlagsTwoway, "g", "op"))
	if err != nil {
		t.Fatal(err)
	}
	rep := decodeReply(t, rr.Body)
	if got := longLong(t, rep); got != 42 || rep.RequestID != 5 {
		t.Fatalf("reply %d id %d, want 42 id 5", got, rep.RequestID)
	}
	if n := s.requests.Load(); n != 2 {
		t.Fatalf("the servant saw %d requests, want 2", n)
	}

	always := startScripted(t, func(int, *giop.Request) giop.Message {
		return &giop.CloseConnection{Envelope: giop.Envelope{Version: giop.V12}}
	})
	da := newDeliverer(t, always.ref("k").String())
	if _, err := da.Deliver(ctx, 2, entry(t, giop.V12, cdr.BigEndian, 5, giop.FlagsTwoway, "g", "op")); err == nil || !strings.Contains(err.Error(), "CloseConnection") {
		t.Fatalf("CloseConnection twice: err = %v", err)
	}
}

// Close fails a call waiting for a servant that does not answer.
func TestCloseInterruptsACall(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	got := make(chan struct{})
	s := startScripted(t, func(int, *giop.Request) giop.Message {
		close(got)
		return nil // never answered: the test's cleanup closes the connection
	})
	d := newDeliverer(t, s.ref("k").String())
	done := make(chan error, 1)
	go func() {
		// No deadline: only Close can end the call.
		_, err := d.Deliver(context.Background(), 1, entry(t, giop.V12, cdr.BigEndian, 1, giop.FlagsTwoway, "g", "op"))
		done <- err
	}()
	<-got
	_ = d.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Deliver returned no error after Close")
		}
	case <-ctx.Done():
		t.Fatal("Deliver still waits after Close")
	}
}
