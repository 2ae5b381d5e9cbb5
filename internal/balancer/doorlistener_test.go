package balancer

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// A new view takes over the socket from a closed one without a connection
// lost or refused in between; closing the door closes the socket.
func TestDoorListenerHandsOver(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := newDoorListener(ln)
	addr := d.Addr().String()
	send := func(msg string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	recv := func(l net.Listener, want string) {
		t.Helper()
		c, err := l.Accept()
		if err != nil {
			t.Fatalf("Accept: %v", err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil || string(got) != want {
			t.Fatalf("read %q (%v), want %q", got, err, want)
		}
	}

	v1 := d.view()
	send("one")
	recv(v1, "one")
	if err := v1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed view: %v, want net.ErrClosed", err)
	}
	// Accepted by the socket while no view waits: kept for the next one.
	send("two")
	v2 := d.view()
	recv(v2, "two")

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after the door closed: %v, want net.ErrClosed", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("the socket still accepts after the door closed")
	}
}
