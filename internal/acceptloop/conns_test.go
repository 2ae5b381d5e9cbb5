package acceptloop_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
)

// Conns serves each connection on its own goroutine and tracks it until
// its serve returns; Close ends Serve with ErrClosing, and Serve after
// Close closes its listener at once.
func TestConns(t *testing.T) {
	t.Parallel()
	var conns acceptloop.Conns[net.Conn]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serving := make(chan net.Conn)
	release := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- conns.Serve(ln, func(nc net.Conn) net.Conn { return nc }, func(nc net.Conn) {
			serving <- nc
			<-release
			nc.Close()
		}, acceptloop.Options{})
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	timeout := time.After(10 * time.Second)
	var nc net.Conn
	select {
	case nc = <-serving:
	case <-timeout:
		t.Fatal("the connection was not served")
	}
	if got := conns.List(); len(got) != 1 || got[0] != nc {
		t.Errorf("List() = %v, want the one connection", got)
	}
	conns.Close()
	select {
	case err := <-served:
		if !errors.Is(err, acceptloop.ErrClosing) {
			t.Errorf("Serve after Close = %v, want ErrClosing", err)
		}
	case <-timeout:
		t.Fatal("Serve did not return after Close")
	}
	if !conns.Closing() {
		t.Error("Closing() = false after Close")
	}
	done := conns.Done()
	select {
	case <-done:
		t.Fatal("Done before the connection's serve returned")
	default:
	}
	close(release)
	select {
	case <-done:
	case <-timeout:
		t.Fatal("Done not closed after the last serve returned")
	}
	if got := conns.List(); len(got) != 0 {
		t.Errorf("List() = %v after every serve returned", got)
	}

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := conns.Serve(ln2, func(nc net.Conn) net.Conn { return nc }, func(net.Conn) {}, acceptloop.Options{}); !errors.Is(err, acceptloop.ErrClosing) {
		t.Errorf("Serve on a closed Conns = %v, want ErrClosing", err)
	}
	if _, err := ln2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the listener given after Close is open: %v", err)
	}
}
