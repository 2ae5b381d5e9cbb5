package balancer_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A GIOP group's front door and its health probes connect to replicas
// through the balancer's Options.Dial, as the HTTP ones do.
func TestGIOPDialsThroughOptions(t *testing.T) {
	t.Parallel()
	t.Run("probe", func(t *testing.T) {
		t.Parallel()
		d, replica, _ := giopDialEnv(t, ms(50))
		eventually(t, 10*time.Second, func() error {
			if d.count(replica) == 0 {
				return fmt.Errorf("no LocateRequest probe dialed %s through Options.Dial", replica)
			}
			return nil
		})
	})
	t.Run("proxy", func(t *testing.T) {
		t.Parallel()
		// The first probe is a minute away: every dial within the test is
		// the front door's.
		d, replica, st := giopDialEnv(t, protocol.Duration(time.Minute))
		if got := d.count(replica); got != 0 {
			t.Fatalf("%d dials of %s before any call, with no probe due", got, replica)
		}
		o, err := orb.New(orb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		obj, err := o.Resolve(st.Reference.Corbaloc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if yes, _, err := (orb.Prime{Object: obj}).IsPrime(ctx, 7919); err != nil || !yes {
			t.Fatalf("is_prime(7919) through the front door = %v, %v", yes, err)
		}
		if obj.Forwarded() {
			t.Fatal("a per-request group forwarded the client instead of proxying")
		}
		if got := d.count(replica); got == 0 {
			t.Errorf("no dial of %s through Options.Dial after a proxied call", replica)
		}
	})
}

// countingDial dials with a net.Dialer and counts the dials per address.
type countingDial struct {
	mu     sync.Mutex
	dialed map[string]int
}

func (d *countingDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed[addr]++
	d.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func (d *countingDial) count(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dialed[addr]
}

// giopDialEnv is a balancer dialing through a countingDial, with a
// per-request GIOP group probed every interval, and one Go Prime servant
// registered in it; it returns the dialer, the servant's address and the
// group.
func giopDialEnv(t *testing.T, interval protocol.Duration) (*countingDial, string, protocol.GroupStatus) {
	t.Helper()
	d := &countingDial{dialed: map[string]int{}}
	e := newEnv(t, envOptions{dial: d.dial})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servant := backend.NewGIOPPrime(backend.GIOPPrimeOptions{})
	go func() { _ = servant.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = servant.Shutdown(ctx)
	})
	addr := ln.Addr().(*net.TCPAddr)
	st := e.mustPutGroup(protocol.Group{
		Name: "dialed", Protocol: protocol.ProtocolGIOP, Binding: protocol.PerRequest, FrontDoor: "127.0.0.1:0",
		Health: protocol.Health{Interval: interval, Timeout: ms(40)},
	})
	e.mustRegisterWith("dialed", protocol.Registration{Address: servant.Reference("127.0.0.1", uint16(addr.Port)).String()})
	return d, addr.String(), st
}
