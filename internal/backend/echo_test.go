package backend_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

// startEcho serves an echo server on a loopback port until the test ends.
func startEcho(t *testing.T) (*backend.Echo, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := backend.NewEcho(nil)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, backend.ErrEchoClosed) {
			t.Errorf("Serve returned %v, want ErrEchoClosed", err)
		}
	})
	return s, ln.Addr().String()
}

func dialEcho(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc.(*net.TCPConn)
}

// Small exchanges come back byte for byte, one after another on one
// connection.
func TestEchoExchanges(t *testing.T) {
	t.Parallel()
	_, addr := startEcho(t)
	nc := dialEcho(t, addr)
	for i := range 100 {
		msg := bytes.Repeat([]byte{byte(i)}, 64)
		if _, err := nc.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(nc, got); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("exchange %d: got %x, want %x", i, got[:8], msg[:8])
		}
	}
}

// A client that sends 4 MiB of random bytes, then closes its sending
// side, reads the same 4 MiB back and then end of file: the echo writes
// everything before half-closing its own side.
func TestEchoHalfClose(t *testing.T) {
	t.Parallel()
	_, addr := startEcho(t)
	nc := dialEcho(t, addr)
	want := make([]byte, 4<<20)
	_, _ = rand.Read(want)
	var got []byte
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() { got, readErr = io.ReadAll(nc) })
	if _, err := nc.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := nc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if readErr != nil {
		t.Fatalf("reading to the end: %v", readErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes back, want the %d sent, equal", len(got), len(want))
	}
}

// Two thousand connections open at once each get their own bytes back.
func TestEchoManyConnections(t *testing.T) {
	t.Parallel()
	_, addr := startEcho(t)
	const n = 2000
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		conns[i] = dialEcho(t, addr)
	}
	for i, nc := range conns {
		msg := []byte{byte(i), byte(i >> 8), 0xee}
		if _, err := nc.Write(msg); err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
	}
	for i, nc := range conns {
		got := make([]byte, 3)
		if _, err := io.ReadFull(nc, got); err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		if want := []byte{byte(i), byte(i >> 8), 0xee}; !bytes.Equal(got, want) {
			t.Fatalf("conn %d got %x, want %x", i, got, want)
		}
	}
}

// Shutdown with a connection still open past its context closes it: the
// client reads end of file (or a reset), and Shutdown returns the
// context's error.
func TestEchoShutdownClosesOpenConnections(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := backend.NewEcho(nil)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	nc := dialEcho(t, ln.Addr().String())
	if _, err := nc.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(nc, b); err != nil { // the connection is being served
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if n, err := nc.Read(b); err == nil {
		t.Errorf("read %d bytes after Shutdown, want the connection closed", n)
	}
	if err := <-served; !errors.Is(err, backend.ErrEchoClosed) {
		t.Errorf("Serve = %v, want ErrEchoClosed", err)
	}
}
