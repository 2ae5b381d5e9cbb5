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
		// Probes are a minute apart, but the prober's first round may
		// still meet the replica: the front door's dials are told apart
		// by what they send first, a Request where a probe sends a
		// LocateRequest.
		d, replica, st := giopDialEnv(t, protocol.Duration(time.Minute))
		if got := d.requests(replica); got != 0 {
			t.Fatalf("%d connections to %s sent a Request before any call", got, replica)
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
		if got := d.requests(replica); got == 0 {
			t.Errorf("no connection dialed through Options.Dial carried the proxied Request to %s", replica)
		}
	})
}

// countingDial dials with a net.Dialer and counts, per address, the dials
// and the connections whose first GIOP message is a Request.
type countingDial struct {
	mu      sync.Mutex
	dialed  map[string]int
	sentReq map[string]int
}

func (d *countingDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed[addr]++
	d.mu.Unlock()
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &firstMessageConn{Conn: c, d: d, addr: addr}, nil
}

// requests counts the connections to addr that sent a Request first.
func (d *countingDial) requests(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sentReq[addr]
}

// firstMessageConn notes the type of the first GIOP message written on
// it: byte 7 of the 12-byte header (0 is a Request, 3 a LocateRequest).
type firstMessageConn struct {
	net.Conn
	d    *countingDial
	addr string
	head []byte
	done bool
}

func (c *firstMessageConn) Write(p []byte) (int, error) {
	if !c.done {
		c.head = append(c.head, p[:min(len(p), 8-len(c.head))]...)
		if len(c.head) == 8 {
			c.done = true
			if c.head[7] == 0 {
				c.d.mu.Lock()
				c.d.sentReq[c.addr]++
				c.d.mu.Unlock()
			}
		}
	}
	return c.Conn.Write(p)
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
	d := &countingDial{dialed: map[string]int{}, sentReq: map[string]int{}}
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
