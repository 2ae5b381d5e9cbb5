package giopagent_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// servantKey is the object key of the test servant's Prime object.
var servantKey = []byte("prime-servant")

// Operations of the test servant beyond Prime's.
const (
	opHold = "hold" // two-way: replies only once the servant's hold channel is released
	opNote = "note" // oneway: counted in noted
)

// servant is a small GIOP server written with the codec: Prime's is_prime
// and prime_count, plus hold and note, answered in the request's version
// and byte order. It joins fragmented requests (GIOP 1.1 and 1.2) by
// concatenating their data, answers LocateRequest with OBJECT_HERE and
// unknown keys with OBJECT_NOT_EXIST.
type servant struct {
	ln      net.Listener
	ref     ior.IOR
	calls   atomic.Int64 // two-way requests served
	noted   atomic.Int64 // oneway notes received
	locates atomic.Int64
	hold    chan struct{} // closed to release held calls
	// closeConns closes every connection the servant has accepted.
	closeConns func()
	holding    atomic.Int64 // calls waiting on hold
	// seen records the versions and byte orders requests came in.
	mu   sync.Mutex
	seen map[string]int
	errs []string // the servant's own failures, reported at cleanup; guarded by mu
}

// fail records a failure of the servant itself (it runs on goroutines of
// its own, where a fuzz target's T must not be used).
func (s *servant) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

func startServant(t testing.TB) *servant {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s := &servant{ln: ln, hold: make(chan struct{}), seen: map[string]int{}}
	s.ref = ior.IOR{TypeID: giop.PrimeRepoID, Profiles: []ior.Profile{ior.IIOPProfile{
		Version: ior.Version{Major: 1, Minor: 2}, Host: "127.0.0.1", Port: uint16(port), ObjectKey: servantKey,
	}}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c)
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	s.closeConns = func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		s.release()
		s.closeConns()
		wg.Wait()
		for _, e := range s.errs {
			t.Error(e)
		}
	})
	return s
}

var releaseOnce sync.Map

// release lets held calls reply.
func (s *servant) release() {
	if _, done := releaseOnce.LoadOrStore(s, true); !done {
		close(s.hold)
	}
}

func (s *servant) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var wmu sync.Mutex
	write := func(m giop.Message) {
		out, err := giop.EncodeMessage(m)
		if err != nil {
			s.fail("servant: encode %T: %v", m, err)
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		c.Write(out)
	}
	var partial []byte // a fragmented message being joined
	fragmented := false
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		b, err := readWhole(r)
		if err != nil {
			return
		}
		h, _ := giop.ParseHeader(b)
		if h.Type == giop.MsgFragment {
			skip := giop.HeaderSize
			if h.Version == giop.V12 {
				skip += 4
			}
			partial = append(partial, b[skip:]...)
			if h.MoreFragments {
				continue
			}
			b, partial = partial, nil
			fragmented = true
			b[6] &^= 0x02
			h.Order.PutUint32(b[8:], uint32(len(b)-giop.HeaderSize))
		} else if h.MoreFragments {
			partial = append([]byte(nil), b...)
			continue
		}
		m, err := giop.DecodeMessage(b)
		if err != nil {
			s.fail("servant: %v", err)
			return
		}
		wasFragmented := fragmented
		fragmented = false
		switch m := m.(type) {
		case *giop.LocateRequest:
			s.locates.Add(1)
			write(giop.LocateReplyTo(m, giop.LocateObjectHere))
		case *giop.Request:
			s.mu.Lock()
			s.seen[m.Version.String()+"/"+m.Order.String()]++
			s.mu.Unlock()
			if m.Operation == opNote {
				s.noted.Add(1)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep := s.answer(m)
				if !wasFragmented {
					write(rep)
					return
				}
				// A fragmented request gets a fragmented reply.
				out, err := giop.EncodeMessage(rep)
				if err != nil {
					s.fail("servant: %v", err)
					return
				}
				pieces, err := split(out, rep.BodyOffset, rep.RequestID)
				if err != nil {
					s.fail("servant: %v", err)
					return
				}
				wmu.Lock()
				defer wmu.Unlock()
				for _, p := range pieces {
					c.Write(p)
				}
			}()
		}
	}
}

func (s *servant) answer(m *giop.Request) *giop.Reply {
	rep := giop.ReplyTo(m, giop.StatusNoException)
	key, _ := m.Target.Key()
	if string(key) != string(servantKey) {
		rep.SetSystemException(giop.SystemException{RepositoryID: "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0", Completed: giop.CompletedNo})
		return rep
	}
	s.calls.Add(1)
	n, err := m.LongArg()
	if err != nil {
		rep.SetSystemException(giop.SystemException{RepositoryID: "IDL:omg.org/CORBA/MARSHAL:1.0", Completed: giop.CompletedNo})
		return rep
	}
	switch m.Operation {
	case giop.OpIsPrime:
		rep.SetBooleanResult(isPrime(n))
	case giop.OpPrimeCount:
		c := int32(0)
		for i := int32(2); i < n; i++ {
			if isPrime(i) {
				c++
			}
		}
		rep.SetLongResult(c)
	case opHold:
		s.holding.Add(1)
		<-s.hold
		s.holding.Add(-1)
		rep.SetLongResult(n)
	default:
		rep.SetSystemException(giop.SystemException{RepositoryID: "IDL:omg.org/CORBA/BAD_OPERATION:1.0", Completed: giop.CompletedNo})
	}
	return rep
}

func isPrime(n int32) bool {
	if n < 2 {
		return false
	}
	for d := int32(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// readWhole reads one message, header included.
func readWhole(r io.Reader) ([]byte, error) {
	hdr := make([]byte, giop.HeaderSize)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	h, err := giop.ParseHeader(hdr)
	if err != nil {
		return nil, err
	}
	b := make([]byte, giop.HeaderSize+int(h.Size))
	copy(b, hdr)
	_, err = io.ReadFull(r, b[giop.HeaderSize:])
	return b, err
}

// rawClient speaks GIOP on one connection with messages built by hand, so
// tests choose versions, byte orders and fragments.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	r  *bufio.Reader
	id uint32
	// fragmentedReplies counts messages that came in fragments.
	fragmentedReplies int
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

// request builds a request of op with a long argument.
func (rc *rawClient) request(v giop.Version, order cdr.ByteOrder, op string, n int32) *giop.Request {
	rc.id++
	req := &giop.Request{
		Envelope:      giop.Envelope{Version: v, Order: order},
		RequestID:     rc.id,
		ResponseFlags: giop.FlagsTwoway,
		Target:        giop.KeyTarget(servantKey),
		Operation:     op,
	}
	req.SetLongArg(n)
	return req
}

func (rc *rawClient) send(m giop.Message) {
	rc.t.Helper()
	out, err := giop.EncodeMessage(m)
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.sendBytes(out)
}

func (rc *rawClient) sendBytes(b []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// recv reads one message, failing the test after 5s.
func (rc *rawClient) recv() giop.Message {
	rc.t.Helper()
	m, err := rc.tryRecv(5 * time.Second)
	if err != nil {
		rc.t.Fatal(err)
	}
	return m
}

func (rc *rawClient) tryRecv(d time.Duration) (giop.Message, error) {
	rc.c.SetReadDeadline(time.Now().Add(d))
	b, err := readWhole(rc.r)
	if err != nil {
		return nil, err
	}
	h, _ := giop.ParseHeader(b)
	if h.MoreFragments {
		// Join the fragments that follow (all of them, in GIOP 1.1 and in
		// these tests' 1.2, come next).
		rc.fragmentedReplies++
		for more := true; more; {
			f, err := readWhole(rc.r)
			if err != nil {
				return nil, err
			}
			fh, _ := giop.ParseHeader(f)
			if fh.Type != giop.MsgFragment {
				return nil, fmt.Errorf("a %v between fragments", fh.Type)
			}
			skip := giop.HeaderSize
			if fh.Version == giop.V12 {
				skip += 4
			}
			b = append(b, f[skip:]...)
			more = fh.MoreFragments
		}
		b[6] &^= 0x02
		h.Order.PutUint32(b[8:], uint32(len(b)-giop.HeaderSize))
	}
	return giop.DecodeMessage(b)
}

// reply sends req and returns the reply to it.
func (rc *rawClient) call(req *giop.Request) *giop.Reply {
	rc.t.Helper()
	rc.send(req)
	m := rc.recv()
	rep, ok := m.(*giop.Reply)
	if !ok {
		rc.t.Fatalf("answer to %s: %T, want a Reply", req.Operation, m)
	}
	if rep.RequestID != req.RequestID || rep.Version != req.Version || rep.Order != req.Order {
		rc.t.Fatalf("reply id %d GIOP %v %v to request %d GIOP %v %v", rep.RequestID, rep.Version, rep.Order, req.RequestID, req.Version, req.Order)
	}
	return rep
}

// closedByPeer reports whether the connection is closed by the other side
// within d (reads end with EOF or a reset, not a timeout).
func (rc *rawClient) closedByPeer(d time.Duration) bool {
	for {
		_, err := rc.tryRecv(d)
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// splitMessage splits an encoded Request or Reply (GIOP 1.1 or 1.2) into
// the message up to its body, with the more-fragments flag, and a last
// Fragment holding the body.
func splitMessage(t testing.TB, msg []byte, bodyOffset int, id uint32) [][]byte {
	t.Helper()
	pieces, err := split(msg, bodyOffset, id)
	if err != nil {
		t.Fatal(err)
	}
	return pieces
}

// split is splitMessage, returning its error.
func split(msg []byte, bodyOffset int, id uint32) ([][]byte, error) {
	h, err := giop.ParseHeader(msg)
	if err != nil {
		return nil, err
	}
	if bodyOffset <= giop.HeaderSize || bodyOffset >= len(msg) {
		return nil, fmt.Errorf("cannot split a message of %d bytes at its body offset %d", len(msg), bodyOffset)
	}
	first := append([]byte(nil), msg[:bodyOffset]...)
	first[6] |= 0x02
	h.Order.PutUint32(first[8:], uint32(len(first)-giop.HeaderSize))
	frag := &giop.Fragment{Envelope: giop.Envelope{Version: h.Version, Order: h.Order}, Body: msg[bodyOffset:]}
	if h.Version == giop.V12 {
		frag.RequestID = id
	}
	last, err := giop.EncodeMessage(frag)
	if err != nil {
		return nil, err
	}
	return [][]byte{first, last}, nil
}
