package giopdoor_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// waitBound bounds every wait in these tests; nothing waits by sleeping.
const waitBound = 10 * time.Second

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newBalancer starts a real balancer over a real store.
func newBalancer(t testing.TB) *balancer.Balancer {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := balancer.New(balancer.Options{Store: st, Logger: discard, AdminURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return b
}

// giopGroup creates a GIOP group on a free port and returns its front
// door's address.
func giopGroup(t testing.TB, b *balancer.Balancer, gs protocol.Group) string {
	t.Helper()
	gs.Protocol = protocol.ProtocolGIOP
	if gs.Name == "" {
		gs.Name = "g"
	}
	gs.FrontDoor = "127.0.0.1:0"
	if gs.Strategy == "" {
		gs.Strategy = "round-robin"
	}
	st, _, err := b.PutGroup(gs)
	if err != nil {
		t.Fatal(err)
	}
	return st.Listening
}

func register(t testing.TB, b *balancer.Balancer, group, addr string) string {
	t.Helper()
	r, _, err := b.Register(group, protocol.Registration{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// startPrime starts fulcrum's Go Prime servant on a free port.
func startPrime(t testing.TB) ior.IOR {
	t.Helper()
	p := backend.NewGIOPPrime(backend.GIOPPrimeOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		_ = p.Shutdown(ctx)
	})
	a := ln.Addr().(*net.TCPAddr)
	return p.Reference("127.0.0.1", uint16(a.Port))
}

// ---- a raw GIOP client: sends messages as built, reads what comes back.

type rawClient struct {
	t  *testing.T
	nc net.Conn
}

func dial(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitBound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func (c *rawClient) send(m giop.Message) {
	c.t.Helper()
	b, err := giop.EncodeMessage(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(b)
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(waitBound))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one message (whole, header included).
func (c *rawClient) next() (giop.Message, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(waitBound))
	return readMessage(c.nc)
}

func (c *rawClient) recv() giop.Message {
	c.t.Helper()
	m, err := c.next()
	if err != nil {
		c.t.Fatalf("reading an answer: %v", err)
	}
	return m
}

// eof waits for the front door to close the connection.
func (c *rawClient) eof() {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(waitBound))
	var b [64]byte
	for {
		_, err := c.nc.Read(b[:])
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("the connection was not closed")
		}
		return
	}
}

func readMessage(r io.Reader) (giop.Message, error) {
	var hdr [giop.HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	order := binary.ByteOrder(binary.BigEndian)
	if hdr[6]&1 != 0 {
		order = binary.LittleEndian
	}
	size := order.Uint32(hdr[8:])
	if size > 1<<24 {
		return nil, errors.New("answer too large")
	}
	b := make([]byte, giop.HeaderSize+int(size))
	copy(b, hdr[:])
	if _, err := io.ReadFull(r, b[giop.HeaderSize:]); err != nil {
		return nil, err
	}
	return giop.DecodeMessage(b)
}

func env(v giop.Version, o cdr.ByteOrder) giop.Envelope { return giop.Envelope{Version: v, Order: o} }

// isPrimeRequest is a two-way is_prime(n) for key.
func isPrimeRequest(v giop.Version, o cdr.ByteOrder, id uint32, key string, n int32) *giop.Request {
	r := &giop.Request{Envelope: env(v, o), RequestID: id, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte(key)), Operation: giop.OpIsPrime}
	r.SetLongArg(n)
	return r
}

var versions = []giop.Version{giop.V10, giop.V11, giop.V12}
var orders = []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian}

// ---- a controllable test servant, for what the Prime servant never does.

// servant answers is_prime for its key like the Prime servant, but can be
// told to hold replies, close with CloseConnection instead of answering,
// or forward every call. It records the request ids it sees and the
// CancelRequests it gets.
type servant struct {
	t   *testing.T
	ln  net.Listener
	key string
	ref ior.IOR

	requests atomic.Int64
	oneways  chan int32
	cancels  chan uint32
	seen     chan uint32
	// closeNext: the next n requests get CloseConnection and a closed
	// connection instead of an answer.
	closeNext atomic.Int32
	forward   atomic.Pointer[ior.IOR]
	// hold, when set, is waited on before each reply.
	hold atomic.Pointer[chan struct{}]

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startServant(t *testing.T, key string) *servant {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &servant{t: t, ln: ln, key: key, oneways: make(chan int32, 1024), cancels: make(chan uint32, 1024),
		seen: make(chan uint32, 4096), conns: map[net.Conn]struct{}{}}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	s.ref = ior.IOR{TypeID: giop.PrimeRepoID, Profiles: []ior.Profile{ior.IIOPProfile{Order: cdr.BigEndian, Version: ior.V12, Host: "127.0.0.1", Port: port, ObjectKey: []byte(key)}}}
	go s.accept()
	t.Cleanup(s.stop)
	return s
}

func (s *servant) stop() {
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
}

func (s *servant) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *servant) serve(c net.Conn) {
	defer c.Close()
	var wmu sync.Mutex
	write := func(m giop.Message) {
		b, err := giop.EncodeMessage(m)
		if err != nil {
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = c.Write(b)
	}
	for {
		m, err := readMessage(c)
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *giop.Request:
			s.requests.Add(1)
			s.seen <- m.RequestID
			if s.closeNext.Add(-1) >= 0 {
				write(&giop.CloseConnection{Envelope: env(m.Version, m.Order)})
				return
			}
			if !m.ResponseExpected() {
				n, _ := m.LongArg()
				s.oneways <- n
				continue
			}
			go s.answer(m, write)
		case *giop.LocateRequest:
			st := giop.LocateUnknownObject
			if k, _ := m.Target.Key(); string(k) == s.key {
				st = giop.LocateObjectHere
			}
			write(giop.LocateReplyTo(m, st))
		case *giop.CancelRequest:
			s.cancels <- m.RequestID
		}
	}
}

func (s *servant) answer(m *giop.Request, write func(giop.Message)) {
	if h := s.hold.Load(); h != nil {
		select {
		case <-*h:
		case <-time.After(waitBound):
		}
	}
	if fw := s.forward.Load(); fw != nil {
		rep := giop.ReplyTo(m, giop.StatusLocationForward)
		rep.SetForward(*fw, false)
		write(rep)
		return
	}
	if k, _ := m.Target.Key(); string(k) != s.key {
		rep := giop.ReplyTo(m, giop.StatusSystemException)
		rep.SetSystemException(giop.ObjectNotExist(0, giop.CompletedNo))
		write(rep)
		return
	}
	n, err := m.LongArg()
	if err != nil {
		rep := giop.ReplyTo(m, giop.StatusSystemException)
		rep.SetSystemException(giop.SystemException{RepositoryID: "IDL:omg.org/CORBA/MARSHAL:1.0", Completed: giop.CompletedNo})
		write(rep)
		return
	}
	rep := giop.ReplyTo(m, giop.StatusNoException)
	rep.SetBooleanResult(n > 0 && backend.IsPrime(uint64(n)))
	write(rep)
}

// recvN waits for a value on ch, bounded.
func recvN[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// untilEvent checks cond after each event of group (and once at first),
// until it holds: a wait woken by the balancer's own events, bounded.
func untilEvent(t *testing.T, b *balancer.Balancer, group, what string, cond func() bool) {
	t.Helper()
	events, cancel, err := b.Subscribe(group)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	timeout := time.NewTimer(waitBound)
	defer timeout.Stop()
	for !cond() {
		select {
		case _, ok := <-events:
			if !ok {
				t.Fatalf("group %s went away waiting until %s", group, what)
			}
		case <-timeout.C:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// giopRef is a group's own IOR from its status.
func giopRef(st protocol.GroupStatus) (ior.IOR, error) {
	if st.Reference == nil {
		return ior.IOR{}, errors.New("no reference")
	}
	return ior.Parse(st.Reference.IOR)
}

// setSize writes message_size into a raw message's header.
func setSize(b []byte, n int) {
	order := binary.ByteOrder(binary.BigEndian)
	if b[6]&1 != 0 {
		order = binary.LittleEndian
	}
	order.PutUint32(b[8:12], uint32(n))
}
