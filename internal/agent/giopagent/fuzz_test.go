package giopagent_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// FuzzClientInput sends arbitrary bytes to a running agent as a client
// would, then ends the connection: the agent must close it (after a
// MessageError or not) without panicking or hanging, and keep answering
// another client's calls.
func FuzzClientInput(f *testing.F) {
	s := startServant(f)
	a, err := giopagent.New(giopagent.Options{Target: s.ref, Logger: quiet, Limits: giop.Limits{MaxMessageSize: 64 << 10}})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go a.Serve(ln)
	f.Cleanup(func() { a.Close() })
	addr := ln.Addr().String()

	seed := func(m giop.Message) []byte {
		b, err := giop.EncodeMessage(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	for _, v := range versions {
		for _, o := range orders {
			req := &giop.Request{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: 1, ResponseFlags: giop.FlagsTwoway,
				Target: giop.KeyTarget(servantKey), Operation: giop.OpIsPrime}
			req.SetLongArg(7)
			whole := seed(req)
			f.Add(whole)
			if v != giop.V10 {
				pieces := splitMessage(f, whole, req.BodyOffset, 1)
				f.Add(append(append([]byte(nil), pieces[0]...), pieces[1]...))
				f.Add(pieces[1])
			}
			f.Add(seed(&giop.LocateRequest{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: 2, Target: giop.KeyTarget(servantKey)}))
			f.Add(seed(&giop.CancelRequest{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: 1}))
		}
	}
	f.Add([]byte("GIOP\x01\x02\x00\x00\x7f\xff\xff\xff"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))

	f.Fuzz(func(t *testing.T, input []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(input); err != nil && !isReset(err) {
			t.Fatal(err)
		}
		c.(*net.TCPConn).CloseWrite()
		if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
			t.Fatalf("the agent did not close the connection: %v", err)
		}
		rc := dialRaw(t, addr)
		rep := rc.call(rc.request(giop.V12, cdr.BigEndian, giop.OpIsPrime, 7))
		if ok, err := rep.BooleanResult(); err != nil || !ok {
			t.Fatalf("a call after the input: %v, %v", ok, err)
		}
	})
}

// isReset reports whether err is a connection reset (the agent closed the
// connection with unread input).
func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}
