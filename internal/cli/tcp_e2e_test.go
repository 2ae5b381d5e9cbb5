package cli

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tcpReplica is a real TCP replica: it echoes each line back until the
// client closes. accepted receives each connection it accepts.
func tcpReplica(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), ch
}

// tcpGroup creates tcp group name (round robin, reports every 50 ms) on
// b with replicas at addrs, and returns its front door's address.
func tcpGroup(t *testing.T, b *balancer.Balancer, name string, addrs ...string) string {
	t.Helper()
	st, _, err := b.PutGroup(protocol.Group{Name: name, Protocol: protocol.ProtocolTCP, FrontDoor: "127.0.0.1:0", Strategy: "round-robin",
		ReportInterval: protocol.Duration(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if _, _, err := b.Register(name, protocol.Registration{Address: a}); err != nil {
			t.Fatal(err)
		}
	}
	return st.Listening
}

// echoThrough opens a connection to addr and echoes line through it once,
// so that the connection is proxied and counted by then. It is closed at
// the end of the test.
func echoThrough(t *testing.T, addr, line string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != line {
		t.Fatalf("echo through %s: %q, %v; want %q", addr, got, err, line)
	}
	return c
}

// boundedCtx is a context that ends with the test or after d.
func boundedCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
