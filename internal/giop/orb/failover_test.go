package orb_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
)

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) ior.Address {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return ior.Address{Version: ior.V12, Host: "127.0.0.1", Port: uint16(port)}
}

// A reference listing several addresses, as alternate addresses or as
// several profiles: when the first cannot be connected to, the call goes
// to the next, and later calls go straight there.
func TestFailoverAcrossAddresses(t *testing.T) {
	t.Parallel()
	for _, form := range []ior.Form{ior.FormAlternates, ior.FormProfiles} {
		t.Run(form.String(), func(t *testing.T) {
			t.Parallel()
			r := startReplica(t)
			p, _ := r.ref.IIOP()
			dead := deadAddr(t)
			ref, err := ior.MultiAddress(r.ref.TypeID, p.ObjectKey, []ior.Address{dead, p.Address()}, form)
			if err != nil {
				t.Fatal(err)
			}
			o := newORB(t, orb.Options{})
			obj, err := o.Resolve(ref.String())
			if err != nil {
				t.Fatal(err)
			}
			prime := orb.Prime{Object: obj}
			yes, _, err := prime.IsPrime(ctxFor(t), 7)
			if err != nil || !yes {
				t.Fatalf("first call with %s dead: %v, %v; want true from %s", dead.HostPort(), yes, err, p.Address().HostPort())
			}

			// Something listens on the first address now: the object
			// keeps to the address that worked.
			ln, err := net.Listen("tcp", dead.HostPort())
			if err != nil {
				t.Fatalf("listening on the first address again: %v", err)
			}
			var accepted atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					c.Close()
				}
			}()
			if yes, _, err := prime.IsPrime(ctxFor(t), 11); err != nil || !yes {
				t.Fatalf("second call: %v, %v; want true", yes, err)
			}
			ln.Close()
			<-done
			if n := accepted.Load(); n != 0 {
				t.Fatalf("second call: %d connections to the first address, want 0", n)
			}
		})
	}
}

// Every address dead: TRANSIENT, COMPLETED_NO, naming each address tried.
func TestFailoverAllAddressesDead(t *testing.T) {
	t.Parallel()
	a, b := deadAddr(t), deadAddr(t)
	ref, err := ior.MultiAddress("IDL:Prime:1.0", []byte("prime"), []ior.Address{a, b}, ior.FormAlternates)
	if err != nil {
		t.Fatal(err)
	}
	o := newORB(t, orb.Options{})
	obj, err := o.Object(ref)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = orb.Prime{Object: obj}.IsPrime(ctxFor(t), 5)
	var ex giop.SystemException
	if !errors.As(err, &ex) || ex.Name() != "TRANSIENT" || ex.Completed != giop.CompletedNo {
		t.Fatalf("got %v, want TRANSIENT COMPLETED_NO", err)
	}
	for _, addr := range []ior.Address{a, b} {
		if !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(int(addr.Port))) {
			t.Errorf("error %q does not name %s", err, addr.HostPort())
		}
	}
}
