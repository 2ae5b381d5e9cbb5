package orb_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// replica is a Prime servant on a loopback port.
type replica struct {
	s   *backend.GIOPPrime
	ref ior.IOR
	ln  net.Listener
}

func startReplica(t *testing.T) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := backend.NewGIOPPrime(backend.GIOPPrimeOptions{})
	go func() { _ = s.Serve(ln) }()
	r := &replica{s: s, ln: ln, ref: s.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port))}
	t.Cleanup(r.stop)
	return r
}

// stop shuts the replica down: its clients get CloseConnection, and later
// connections are refused.
func (r *replica) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.s.Shutdown(ctx)
}

// forwarder is a front door as a standard CORBA locator is one: every
// Request is answered LOCATION_FORWARD (or _PERM) to the reference next()
// returns, and every LocateRequest OBJECT_FORWARD. It counts what it got.
type forwarder struct {
	ln       net.Listener
	next     func() ior.IOR
	perm     bool
	requests atomic.Int64
	locates  atomic.Int64
	wg       sync.WaitGroup
}

func startForwarder(t *testing.T, next func() ior.IOR) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, next: next}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *forwarder) ref(key string) string {
	return "corbaloc:iiop:1.2@" + f.ln.Addr().String() + "/" + key
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
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
				switch m := m.(type) {
				case *giop.Request:
					f.requests.Add(1)
					rep := giop.ReplyTo(m, giop.StatusLocationForward)
					rep.SetForward(f.next(), f.perm)
					_ = w.Write(rep)
				case *giop.LocateRequest:
					f.locates.Add(1)
					rep := giop.LocateReplyTo(m, giop.LocateObjectForward)
					rep.SetForward(f.next(), f.perm)
					_ = w.Write(rep)
				}
			}
		}()
	}
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

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func hostPort(ref ior.IOR) string {
	p, _ := ref.IIOP()
	return p.Address().HostPort()
}

// The client follows LOCATION_FORWARD, keeps calling the replica directly,
// and when that replica's connection fails goes back to the front door
// (once, for a call not yet sent) and on to the next replica.
func TestForwardFollowAndRevert(t *testing.T) {
	t.Parallel()
	for _, v := range []giop.Version{giop.V10, giop.V11, giop.V12} {
		for _, locate := range []bool{false, true} {
			t.Run(v.String()+map[bool]string{false: "", true: "-locate"}[locate], func(t *testing.T) {
				t.Parallel()
				a, b := startReplica(t), startReplica(t)
				var target atomic.Pointer[ior.IOR]
				target.Store(&a.ref)
				fd := startForwarder(t, func() ior.IOR { return *target.Load() })
				o := newORB(t, orb.Options{Version: v, Order: cdr.LittleEndian, Locate: locate})
				obj, err := o.Resolve(fd.ref("prime"))
				if err != nil {
					t.Fatal(err)
				}
				prime := orb.Prime{Object: obj}
				ctx := ctxFor(t)
				for i := range 5 {
					ok, res, err := prime.IsPrime(ctx, 13)
					if err != nil || !ok {
						t.Fatalf("call %d: %v, %v", i, ok, err)
					}
					if got := hostPort(res.Target); got != hostPort(a.ref) {
						t.Fatalf("call %d answered by %s, want replica a %s", i, got, hostPort(a.ref))
					}
					if wantFwd := map[bool]int{true: 1, false: 0}[i == 0]; res.Forwards != wantFwd {
						t.Errorf("call %d followed %d forwards, want %d", i, res.Forwards, wantFwd)
					}
				}
				if !obj.Forwarded() {
					t.Error("the object does not say it is forwarded")
				}
				seen := fd.requests.Load() + fd.locates.Load()
				if seen != 1 {
					t.Errorf("front door saw %d messages for 5 calls, want 1 (then the replica directly)", seen)
				}

				// Replica a goes away: the next call goes back through
				// the front door, which now names b.
				target.Store(&b.ref)
				a.stop()
				ok, res, err := prime.IsPrime(ctx, 13)
				if err != nil || !ok {
					t.Fatalf("call after replica a stopped: %v, %v", ok, err)
				}
				if got := hostPort(res.Target); got != hostPort(b.ref) || !res.Reverted || res.Forwards != 1 {
					t.Errorf("after the failure: answered by %s (want b %s), reverted %v, forwards %d", got, hostPort(b.ref), res.Reverted, res.Forwards)
				}
				if got := fd.requests.Load() + fd.locates.Load(); got != 2 {
					t.Errorf("front door saw %d messages, want 2", got)
				}
				if got := hostPort(obj.Original()); got != fd.ln.Addr().String() {
					t.Errorf("original reference changed to %s by a temporary forward", got)
				}
			})
		}
	}
}

// LOCATION_FORWARD_PERM replaces the object's reference for good.
func TestForwardPerm(t *testing.T) {
	t.Parallel()
	a := startReplica(t)
	fd := startForwarder(t, func() ior.IOR { return a.ref })
	fd.perm = true
	o := newORB(t, orb.Options{})
	obj, _ := o.Resolve(fd.ref("prime"))
	if _, _, err := (orb.Prime{Object: obj}).IsPrime(ctxFor(t), 5); err != nil {
		t.Fatal(err)
	}
	if obj.Forwarded() || hostPort(obj.Original()) != hostPort(a.ref) {
		t.Errorf("after LOCATION_FORWARD_PERM: forwarded %v, original %s; want the replica as the original", obj.Forwarded(), hostPort(obj.Original()))
	}
}

// A front door that forwards to itself ends in TRANSIENT, not a loop.
func TestForwardLoop(t *testing.T) {
	t.Parallel()
	var self ior.IOR
	fd := startForwarder(t, func() ior.IOR { return self })
	loc, _ := ior.ParseCorbaloc(fd.ref("prime"))
	self = loc.IOR(giop.PrimeRepoID)
	o := newORB(t, orb.Options{MaxForwards: 4})
	obj, _ := o.Resolve(fd.ref("prime"))
	_, _, err := orb.Prime{Object: obj}.IsPrime(ctxFor(t), 5)
	var ex giop.SystemException
	if !errors.As(err, &ex) || ex.Name() != "TRANSIENT" {
		t.Fatalf("got %v, want TRANSIENT", err)
	}
	if n := fd.requests.Load(); n != 5 {
		t.Errorf("%d requests before giving up, want 5 (the call and 4 forwards)", n)
	}
}

// Nothing listening: TRANSIENT, COMPLETED_NO, no retry for an original
// reference.
func TestConnectFailure(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	o := newORB(t, orb.Options{})
	obj, _ := o.Resolve("corbaloc:iiop:1.2@" + addr + "/prime")
	_, _, err := orb.Prime{Object: obj}.IsPrime(ctxFor(t), 5)
	var ex giop.SystemException
	var le *orb.LocalError
	if !errors.As(err, &ex) || ex.Name() != "TRANSIENT" || ex.Completed != giop.CompletedNo || !errors.As(err, &le) {
		t.Fatalf("got %v, want a local TRANSIENT COMPLETED_NO", err)
	}
}

// A call in flight when the replica's connection breaks fails with
// COMM_FAILURE, COMPLETED_MAYBE (it may have run) and is not re-sent; the
// object is back on the front door for the next call.
func TestCallInFlightAtBreak(t *testing.T) {
	t.Parallel()
	// A replica that reads one request and drops the connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				r := wire.NewReader(nc, giop.Limits{})
				if _, err := r.Next(); err == nil {
					got.Add(1)
				}
				nc.Close()
			}()
		}
	}()
	dropper := ior.IOR{TypeID: giop.PrimeRepoID, Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "127.0.0.1",
		Port: uint16(ln.Addr().(*net.TCPAddr).Port), ObjectKey: []byte("Prime")}}}
	fd := startForwarder(t, func() ior.IOR { return dropper })
	o := newORB(t, orb.Options{})
	obj, _ := o.Resolve(fd.ref("prime"))
	_, _, err = orb.Prime{Object: obj}.IsPrime(ctxFor(t), 5)
	var ex giop.SystemException
	if !errors.As(err, &ex) || ex.Name() != "COMM_FAILURE" || ex.Completed != giop.CompletedMaybe {
		t.Fatalf("got %v, want COMM_FAILURE COMPLETED_MAYBE", err)
	}
	if n := got.Load(); n != 1 {
		t.Errorf("the replica got the request %d times, want 1 (no re-send)", n)
	}
	if obj.Forwarded() {
		t.Error("still forwarded to the broken replica")
	}
}

// A cancelled call returns the context's error and leaves the connection
// usable.
func TestCancel(t *testing.T) {
	t.Parallel()
	a := startReplica(t)
	o := newORB(t, orb.Options{})
	obj, _ := o.Object(a.ref)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := (orb.Prime{Object: obj}).PrimeCount(ctx, 1000); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if n, _, err := (orb.Prime{Object: obj}).PrimeCount(ctxFor(t), 1000); err != nil || n != 168 {
		t.Fatalf("next call: %d, %v", n, err)
	}
}

// Bad options and references are errors naming the field.
func TestBadOptionsAndReferences(t *testing.T) {
	t.Parallel()
	if _, err := orb.New(orb.Options{Version: giop.Version{Major: 1, Minor: 3}}); err == nil {
		t.Error("GIOP 1.3 accepted")
	}
	if _, err := orb.New(orb.Options{Order: 7}); err == nil {
		t.Error("byte order 7 accepted")
	}
	o := newORB(t, orb.Options{})
	for _, ref := range []string{"", "http://x", "IOR:00", "corbaloc:rir:/NameService"} {
		if _, err := o.Resolve(ref); err == nil {
			t.Errorf("reference %q accepted", ref)
		}
	}
	if _, err := o.Object(ior.IOR{TypeID: "IDL:X:1.0"}); err == nil {
		t.Error("nil reference accepted")
	}
	_ = o.Close()
	obj, _ := o.Resolve("corbaloc:iiop:127.0.0.1:1/x")
	_, err := obj.Invoke(ctxFor(t), "x", nil)
	var ex giop.SystemException
	if !errors.As(err, &ex) || ex.Name() != "BAD_INV_ORDER" || !errors.Is(err, orb.ErrClosed) {
		t.Errorf("call on a closed ORB: %v, want BAD_INV_ORDER", err)
	}
}
