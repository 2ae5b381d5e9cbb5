package backend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// startGIOPPrime serves a Prime servant on a loopback port and returns it
// with its reference; the test's cleanup shuts it down.
func startGIOPPrime(t testing.TB, opts backend.GIOPPrimeOptions) (*backend.GIOPPrime, ior.IOR) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := backend.NewGIOPPrime(opts)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, backend.ErrGIOPServerClosed) {
			t.Errorf("Serve returned %v, want ErrGIOPServerClosed", err)
		}
	})
	a := ln.Addr().(*net.TCPAddr)
	return s, s.Reference("127.0.0.1", uint16(a.Port))
}

func newORB(t *testing.T, o orb.Options) *orb.ORB {
	t.Helper()
	b, err := orb.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Every GIOP version in both byte orders, with and without LocateRequest,
// through the servant's IOR and a corbaloc URL.
func TestGIOPPrimeRoundTrips(t *testing.T) {
	t.Parallel()
	_, ref := startGIOPPrime(t, backend.GIOPPrimeOptions{})
	p, _ := ref.IIOP()
	for _, v := range []giop.Version{giop.V10, giop.V11, giop.V12} {
		for _, order := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			for _, locate := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v-%v-locate=%v", v, order, locate), func(t *testing.T) {
					t.Parallel()
					ctx := testCtx(t)
					o := newORB(t, orb.Options{Version: v, Order: order, Locate: locate})
					for _, s := range []string{ref.String(), fmt.Sprintf("corbaloc:iiop:1.2@%s/%s", p.Address().HostPort(), backend.GIOPPrimeKey)} {
						obj, err := o.Resolve(s)
						if err != nil {
							t.Fatal(err)
						}
						prime := orb.Prime{Object: obj}
						for n, want := range map[int32]bool{1_000_003: true, 1_000_001: false, 2: true, 1: false, -7: false} {
							got, res, err := prime.IsPrime(ctx, n)
							if err != nil {
								t.Fatalf("is_prime(%d): %v", n, err)
							}
							if got != want {
								t.Errorf("is_prime(%d) = %v, want %v", n, got, want)
							}
							if res.Reply.Version != v || res.Reply.Order != order {
								t.Errorf("reply in GIOP %v %v, want %v %v", res.Reply.Version, res.Reply.Order, v, order)
							}
						}
						count, _, err := prime.PrimeCount(ctx, 100)
						if err != nil || count != 25 {
							t.Errorf("prime_count(100) = %d, %v; want 25", count, err)
						}
						isA, err := obj.IsA(ctx, giop.PrimeRepoID)
						if err != nil || !isA {
							t.Errorf("_is_a(%s) = %v, %v; want true", giop.PrimeRepoID, isA, err)
						}
						isA, err = obj.IsA(ctx, "IDL:Other:1.0")
						if err != nil || isA {
							t.Errorf("_is_a(IDL:Other:1.0) = %v, %v; want false", isA, err)
						}
					}
					if n := o.Conns(); n != 1 {
						t.Errorf("%d connections for one endpoint, want 1", n)
					}
				})
			}
		}
	}
}

// Concurrent calls share one connection, each getting its own answer.
func TestGIOPPrimeConcurrentCalls(t *testing.T) {
	t.Parallel()
	_, ref := startGIOPPrime(t, backend.GIOPPrimeOptions{MaxInflight: 4})
	o := newORB(t, orb.Options{})
	obj, err := o.Object(ref)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	errs := make(chan error, 32)
	for i := range 32 {
		go func() {
			x := int32(10 + i*10)
			got, _, err := orb.Prime{Object: obj}.PrimeCount(ctx, x)
			if err == nil && got != int32(backend.PrimeCount(int(x))) {
				err = fmt.Errorf("prime_count(%d) = %d, want %d", x, got, backend.PrimeCount(int(x)))
			}
			errs <- err
		}()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Requests the servant cannot run get the system exception that says why.
func TestGIOPPrimeSystemExceptions(t *testing.T) {
	t.Parallel()
	_, ref := startGIOPPrime(t, backend.GIOPPrimeOptions{})
	p, _ := ref.IIOP()
	o := newORB(t, orb.Options{})
	ctx := testCtx(t)
	obj, _ := o.Object(ref)
	wrongKey, _ := o.Resolve(fmt.Sprintf("corbaloc:iiop:1.2@%s/Other", p.Address().HostPort()))
	cases := []struct {
		name, want string
		call       func() error
	}{
		{"unknown key", "OBJECT_NOT_EXIST", func() error { _, _, err := orb.Prime{Object: wrongKey}.IsPrime(ctx, 7); return err }},
		{"unknown operation", "BAD_OPERATION", func() error { _, err := obj.Invoke(ctx, "frobnicate", nil); return err }},
		{"missing argument", "MARSHAL", func() error { _, err := obj.Invoke(ctx, giop.OpIsPrime, nil); return err }},
		{"extra argument", "MARSHAL", func() error {
			_, err := obj.Invoke(ctx, giop.OpIsPrime, func(e *cdr.Encoder) { e.Long(7); e.Long(8) })
			return err
		}},
		{"negative count", "BAD_PARAM", func() error { _, _, err := orb.Prime{Object: obj}.PrimeCount(ctx, -1); return err }},
		{"count too large", "BAD_PARAM", func() error { _, _, err := orb.Prime{Object: obj}.PrimeCount(ctx, backend.MaxCountX+1); return err }},
	}
	for _, c := range cases {
		err := c.call()
		var ex giop.SystemException
		if !errors.As(err, &ex) || ex.Name() != c.want || ex.Completed != giop.CompletedNo {
			t.Errorf("%s: got %v, want %s COMPLETED_NO", c.name, err, c.want)
		}
	}
	// The connection survives them all.
	if ok, _, err := (orb.Prime{Object: obj}).IsPrime(ctx, 7); err != nil || !ok {
		t.Errorf("is_prime(7) after the exceptions: %v, %v", ok, err)
	}
	// A LocateRequest for another key: UNKNOWN_OBJECT.
	lo := newORB(t, orb.Options{Locate: true})
	wk, _ := lo.Resolve(fmt.Sprintf("corbaloc:iiop:1.2@%s/Other", p.Address().HostPort()))
	_, err := wk.Invoke(ctx, giop.OpIsPrime, func(e *cdr.Encoder) { e.Long(7) })
	var ex giop.SystemException
	if !errors.As(err, &ex) || ex.Name() != "OBJECT_NOT_EXIST" {
		t.Errorf("locate of an unknown key: %v, want OBJECT_NOT_EXIST", err)
	}
}

// rawConn is a client connection that writes bytes as given.
func rawConn(t *testing.T, ref ior.IOR) net.Conn {
	t.Helper()
	p, _ := ref.IIOP()
	c, err := net.DialTimeout("tcp", p.Address().HostPort(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// expectMessageErrorAndClose reads a MessageError in version v and then
// the end of the connection.
func expectMessageErrorAndClose(t *testing.T, c net.Conn, v giop.Version) {
	t.Helper()
	r := wire.NewReader(c, giop.Limits{})
	b, err := r.Next()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	m, err := giop.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*giop.MessageError); !ok || giop.EnvelopeOf(m).Version != v {
		t.Fatalf("got a %v in GIOP %v, want MessageError in %v", m.Type(), giop.EnvelopeOf(m).Version, v)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("after MessageError: %v, want the connection closed", err)
	}
}

func encode(t *testing.T, m giop.Message) []byte {
	t.Helper()
	b, err := giop.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bytes that are not GIOP get MessageError and a closed connection; other
// connections go on.
func TestGIOPPrimeBadInput(t *testing.T) {
	t.Parallel()
	_, ref := startGIOPPrime(t, backend.GIOPPrimeOptions{Limits: giop.Limits{MaxMessageSize: 1024}})
	good := func(v giop.Version) giop.Message {
		r := &giop.Request{Envelope: giop.Envelope{Version: v}, RequestID: 9, ResponseFlags: giop.FlagsTwoway,
			Target: giop.KeyTarget([]byte(backend.GIOPPrimeKey)), Operation: giop.OpIsPrime}
		r.SetLongArg(7)
		return r
	}
	size := func(b []byte, n uint32) []byte {
		b = bytes.Clone(b)
		cdr.BigEndian.PutUint32(b[8:], n)
		return b
	}
	req12 := encode(t, good(giop.V12))
	cases := []struct {
		name  string
		bytes []byte
		want  giop.Version
	}{
		{"bad magic", append([]byte("POIG"), req12[4:]...), giop.V12},
		{"unknown version", append([]byte("GIOP\x01\x03"), req12[6:]...), giop.V12},
		{"version 2.0", append([]byte("GIOP\x02\x00"), req12[6:]...), giop.V12},
		{"too large", size(req12, 4096), giop.V12},
		{"truncated body", size(req12, 8), giop.V12},
		{"reserved flags", append([]byte("GIOP\x01\x02\x80"), req12[7:]...), giop.V12},
		{"unknown message type", append([]byte("GIOP\x01\x01\x00\x09"), req12[8:]...), giop.V11},
		{"reply to a server", encode(t, &giop.Reply{Envelope: giop.Envelope{Version: giop.V11}, RequestID: 1}), giop.V11},
		{"fragment with no message", encode(t, &giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 5, Body: []byte{1, 2, 3, 4}}), giop.V12},
		{"fragmented GIOP 1.1 request", func() []byte {
			b := encode(t, good(giop.V11))
			b[6] |= 0x02
			return b
		}(), giop.V11},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn := rawConn(t, ref)
			if _, err := conn.Write(c.bytes); err != nil {
				t.Fatal(err)
			}
			expectMessageErrorAndClose(t, conn, c.want)
		})
	}
	// Meanwhile a well-behaved client is served.
	o := newORB(t, orb.Options{})
	obj, _ := o.Object(ref)
	if ok, _, err := (orb.Prime{Object: obj}).IsPrime(testCtx(t), 7); err != nil || !ok {
		t.Errorf("is_prime(7) beside the bad clients: %v, %v", ok, err)
	}
}

// A GIOP 1.2 request in fragments is joined and answered; a oneway call
// gets no reply.
func TestGIOPPrimeFragmentsAndOneway(t *testing.T) {
	t.Parallel()
	_, ref := startGIOPPrime(t, backend.GIOPPrimeOptions{})
	conn := rawConn(t, ref)
	oneway := &giop.Request{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 1, ResponseFlags: giop.FlagsOneway,
		Target: giop.KeyTarget([]byte(backend.GIOPPrimeKey)), Operation: giop.OpIsPrime}
	oneway.SetLongArg(11)
	req := &giop.Request{Envelope: giop.Envelope{Version: giop.V12, Order: cdr.LittleEndian}, RequestID: 2, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte(backend.GIOPPrimeKey)), Operation: giop.OpPrimeCount}
	req.SetLongArg(1000)
	whole := encode(t, req)
	// Split after the header: the first piece is 8-aligned, as GIOP 1.2
	// requires of every fragment but the last.
	cut := len(whole) - 4
	cut -= cut % 8
	first := bytes.Clone(whole[:cut])
	first[6] |= 0x02
	cdr.LittleEndian.PutUint32(first[8:], uint32(cut-giop.HeaderSize))
	frag := encode(t, &giop.Fragment{Envelope: giop.Envelope{Version: giop.V12, Order: cdr.LittleEndian}, RequestID: 2, Body: whole[cut:]})
	for _, b := range [][]byte{encode(t, oneway), first, frag} {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	r := wire.NewReader(conn, giop.Limits{})
	b, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	m, err := giop.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := m.(*giop.Reply)
	if !ok || rep.RequestID != 2 {
		t.Fatalf("first answer: %#v, want the reply to request 2 (none to the oneway call 1)", m)
	}
	if n, err := rep.LongResult(); err != nil || n != 168 {
		t.Errorf("prime_count(1000) in fragments = %d, %v; want 168", n, err)
	}
}

// Shutdown sends CloseConnection; the ORB then reconnects when the servant
// is back and re-sends nothing it had not been answered.
func TestGIOPPrimeShutdownSaysCloseConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := backend.NewGIOPPrime(backend.GIOPPrimeOptions{})
	go func() { _ = s.Serve(ln) }()
	ref := s.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port))
	conn := rawConn(t, ref)
	// One call first, so that the servant knows the client's version.
	req := &giop.Request{Envelope: giop.Envelope{Version: giop.V11}, RequestID: 1, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte(backend.GIOPPrimeKey)), Operation: giop.OpIsPrime}
	req.SetLongArg(3)
	if _, err := conn.Write(encode(t, req)); err != nil {
		t.Fatal(err)
	}
	r := wire.NewReader(conn, giop.Limits{})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	b, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := giop.DecodeMessage(b)
	if _, ok := m.(*giop.CloseConnection); !ok || giop.EnvelopeOf(m).Version != giop.V11 {
		t.Fatalf("got %#v, want CloseConnection in GIOP 1.1", m)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after CloseConnection: %v, want EOF", err)
	}
}

func TestGroupReference(t *testing.T) {
	t.Parallel()
	cases := []struct{ fd, group, want string }{
		{"corbaloc:iiop:127.0.0.1:2809", "prime", "127.0.0.1:2809/prime"},
		{"corbaloc:iiop:1.2@lb:7000/other", "prime", "lb:7000/other"},
	}
	for _, c := range cases {
		ref, err := backend.GroupReference(c.fd, c.group)
		if err != nil {
			t.Fatalf("%s: %v", c.fd, err)
		}
		p, _ := ref.IIOP()
		if got := p.Address().HostPort() + "/" + string(p.ObjectKey); got != c.want || ref.TypeID != giop.PrimeRepoID {
			t.Errorf("%s: %s %s, want %s %s", c.fd, ref.TypeID, got, giop.PrimeRepoID, c.want)
		}
	}
	for _, bad := range []string{"", "http://x:1", "corbaloc:iiop:127.0.0.1:2809", "IOR:zz"} {
		if _, err := backend.GroupReference(bad, ""); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
