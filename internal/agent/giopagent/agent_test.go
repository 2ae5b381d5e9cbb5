package giopagent_test

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// startAgent runs an agent in front of target with opts and returns its
// listening address.
func startAgent(t *testing.T, opts giopagent.Options) (*giopagent.Agent, string) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	a, err := giopagent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	t.Cleanup(func() {
		a.Close()
		if err := <-done; err != giopagent.ErrClosed {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return a, ln.Addr().String()
}

var versions = []giop.Version{giop.V10, giop.V11, giop.V12}
var orders = []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian}

// TestPassThroughVersionsAndOrders calls the servant through the agent in
// every GIOP version and byte order, two-way and oneway, and gets the
// servant's answers in the request's version and order.
func TestPassThroughVersionsAndOrders(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	_, addr := startAgent(t, giopagent.Options{Target: s.ref})
	for _, v := range versions {
		for _, o := range orders {
			t.Run(fmt.Sprintf("%v/%v", v, o), func(t *testing.T) {
				rc := dialRaw(t, addr)
				loc := &giop.LocateRequest{Envelope: giop.Envelope{Version: v, Order: o}, RequestID: 99, Target: giop.KeyTarget(servantKey)}
				rc.send(loc)
				if lr, ok := rc.recv().(*giop.LocateReply); !ok || lr.Status != giop.LocateObjectHere || lr.RequestID != 99 {
					t.Fatalf("LocateReply %+v, want OBJECT_HERE to 99", lr)
				}
				for _, n := range []int32{7919, 7921} {
					rep := rc.call(rc.request(v, o, giop.OpIsPrime, n))
					got, err := rep.BooleanResult()
					if err != nil || got != isPrime(n) {
						t.Fatalf("is_prime(%d) = %v, %v; want %v", n, got, err, isPrime(n))
					}
				}
				rep := rc.call(rc.request(v, o, giop.OpPrimeCount, 100))
				if c, err := rep.LongResult(); err != nil || c != 25 {
					t.Fatalf("prime_count(100) = %d, %v; want 25", c, err)
				}
				note := rc.request(v, o, opNote, 1)
				note.ResponseFlags = giop.FlagsOneway
				before := s.noted.Load()
				rc.send(note)
				// The oneway passes without a reply; the next two-way call
				// on the connection is answered normally.
				rep = rc.call(rc.request(v, o, giop.OpIsPrime, 2))
				if ok, err := rep.BooleanResult(); err != nil || !ok {
					t.Fatalf("is_prime(2) after a oneway = %v, %v", ok, err)
				}
				waitFor(t, 5*time.Second, "the oneway at the servant", func() bool { return s.noted.Load() > before })
			})
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range versions {
		for _, o := range orders {
			if s.seen[v.String()+"/"+o.String()] == 0 {
				t.Errorf("no request reached the servant in GIOP %v %v: %v", v, o, s.seen)
			}
		}
	}
}

// TestConcurrentClients runs clients on connections of their own, each
// with several calls outstanding at once, and checks every reply reaches
// the client and request it belongs to.
func TestConcurrentClients(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	_, addr := startAgent(t, giopagent.Options{Target: s.ref})
	const clients, perClient = 8, 50
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := dialRaw(t, addr)
			o := orders[i%2]
			want := map[uint32]int32{}
			// Pipeline: send all, then read all (replies may come in any order).
			var batch []byte
			for j := range perClient {
				n := int32(1000*i + j)
				req := rc.request(giop.V12, o, giop.OpPrimeCount, n%300)
				want[req.RequestID] = n % 300
				b, err := giop.AppendMessage(batch, req)
				if err != nil {
					t.Error(err)
					return
				}
				batch = b
			}
			rc.sendBytes(batch)
			for range perClient {
				m, err := rc.tryRecv(10 * time.Second)
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				rep := m.(*giop.Reply)
				n, ok := want[rep.RequestID]
				if !ok {
					t.Errorf("client %d: reply to request %d, not one of its own or a second time", i, rep.RequestID)
					return
				}
				delete(want, rep.RequestID)
				c, err := rep.LongResult()
				if err != nil || c != primeCount(n) {
					t.Errorf("client %d: prime_count(%d) = %d, %v; want %d", i, n, c, err, primeCount(n))
				}
			}
		}()
	}
	wg.Wait()
	if got := s.calls.Load(); got != clients*perClient {
		t.Errorf("servant served %d calls, want %d", got, clients*perClient)
	}
}

func primeCount(x int32) int32 {
	c := int32(0)
	for i := int32(2); i < x; i++ {
		if isPrime(i) {
			c++
		}
	}
	return c
}

// TestReference checks the reference the agent registers: the target's
// type and key at the agent's address.
func TestReference(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	a, err := giopagent.New(giopagent.Options{Target: s.ref, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ref := a.Reference("10.0.0.7", 4100)
	p, ok := ref.IIOP()
	if !ok || ref.TypeID != giop.PrimeRepoID || p.Host != "10.0.0.7" || p.Port != 4100 || string(p.ObjectKey) != string(servantKey) {
		t.Fatalf("reference %+v, want %s at 10.0.0.7:4100 with the servant's key", ref, giop.PrimeRepoID)
	}
	// A corbaloc target has no type id: the one given is used.
	loc, err := ior.Parse("corbaloc:iiop:1.2@127.0.0.1:1/prime-servant")
	if err != nil {
		t.Fatal(err)
	}
	a, err = giopagent.New(giopagent.Options{Target: loc, TypeID: "IDL:Prime:1.0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Reference("h", 1).TypeID; got != "IDL:Prime:1.0" {
		t.Errorf("type id of a corbaloc target's reference %q, want IDL:Prime:1.0", got)
	}
	if _, err := giopagent.New(giopagent.Options{Target: ior.IOR{TypeID: "IDL:X:1.0"}}); err == nil {
		t.Error("New accepted a target with no IIOP profile")
	}
}
