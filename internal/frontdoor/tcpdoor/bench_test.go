package tcpdoor_test

import (
	"io"
	"net"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
)

// benchEcho is a replica that sends back whatever it receives.
func benchEcho(c net.Conn) {
	defer c.Close()
	_, _ = io.Copy(c, c)
}

// exchange64 sends 64 bytes and reads them back, b.N times, on one
// connection to addr.
func exchange64(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExchange64Direct is the limit: 64-byte exchanges with the
// replica itself.
func BenchmarkExchange64Direct(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go benchEcho(c)
		}
	}()
	exchange64(b, ln.Addr().String())
}

// BenchmarkExchange64 is 64-byte exchanges through the front door.
func BenchmarkExchange64(b *testing.B) {
	exchange64(b, benchDoor(b))
}

// BenchmarkConnectExchangeClose is new connections through the front
// door: each connects, exchanges 64 bytes and closes (the bench's "new
// connections per second"). Its allocations are the front door's, the
// echo replica's and the client's per connection.
func BenchmarkConnectExchangeClose(b *testing.B) {
	addr := benchDoor(b)
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDoor starts an echo replica and a front door before it, both
// closed when b ends, and returns the front door's address.
func benchDoor(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go benchEcho(c)
		}
	}()
	g := &testGroup{obs: make(chan observation, 1)}
	g.snap.Store(benchSnapshot(b, ln.Addr().String()))
	door, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := tcpdoor.New(g, tcpdoor.Options{Logger: discard})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(door)
	}()
	b.Cleanup(func() {
		_ = s.Close()
		<-done
	})
	return door.Addr().String()
}

// BenchmarkBulk1MiB is 1 MiB echoed through the front door, b.N times on
// one connection (the bulk transfers of fulcrum bench tcp).
func BenchmarkBulk1MiB(b *testing.B) {
	c, err := net.Dial("tcp", benchDoor(b))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const size = 1 << 20
	msg := make([]byte, size)
	buf := make([]byte, size)
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		errc := make(chan error, 1)
		go func() {
			_, err := c.Write(msg)
			errc <- err
		}()
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
