package giopconn_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopconn"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// pair is a connected TCP pair: the server's end and the client's.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// readMessage reads one whole message from the client's end within 10s.
func readMessage(t *testing.T, client net.Conn) giop.Message {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	hdr := make([]byte, giop.HeaderSize)
	if _, err := io.ReadFull(client, hdr); err != nil {
		t.Fatalf("reading a header: %v", err)
	}
	h, err := giop.ParseHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	b := append(hdr, make([]byte, h.Size)...)
	if _, err := io.ReadFull(client, b[giop.HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	m, err := giop.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wantEOF checks that the server closed its end.
func wantEOF(t *testing.T, client net.Conn) {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last message: read %d bytes, %v; want EOF", n, err)
	}
}

func TestCloseIfIdleWaitsForWorkInFlight(t *testing.T) {
	t.Parallel()
	server, client := pair(t)
	var closing atomic.Bool
	c := giopconn.New(server, giopconn.Options{Closing: closing.Load})
	c.Saw(giop.Header{Version: giop.V11, Order: cdr.LittleEndian})
	if !c.Enter() {
		t.Fatal("Enter on an open connection = false")
	}
	if c.CloseIfIdle() {
		t.Fatal("CloseIfIdle with work in flight = true")
	}
	closing.Store(true)
	c.Leave() // the last one out of a closing server closes
	m := readMessage(t, client)
	env := giop.EnvelopeOf(m)
	if _, ok := m.(*giop.CloseConnection); !ok || env.Version != giop.V11 || env.Order != cdr.LittleEndian {
		t.Fatalf("got %T in %v, order %v; want CloseConnection in 1.1, little-endian", m, env.Version, env.Order)
	}
	wantEOF(t, client)
	select {
	case <-c.Gone():
	default:
		t.Error("Gone not closed after the connection closed")
	}
	if c.Enter() {
		t.Error("Enter on a closed connection = true")
	}
	if !c.CloseIfIdle() {
		t.Error("CloseIfIdle on a closed connection = false")
	}
}

func TestFailAnswersMessageError(t *testing.T) {
	t.Parallel()
	for _, linger := range []bool{false, true} {
		server, client := pair(t)
		c := giopconn.New(server, giopconn.Options{Linger: linger})
		go c.Fail(giop.Version{Major: 9, Minor: 9}, cdr.BigEndian, errors.New("bad"))
		m := readMessage(t, client)
		if _, ok := m.(*giop.MessageError); !ok || giop.EnvelopeOf(m).Version != giop.Highest {
			t.Fatalf("linger %v: got %T in %v; want MessageError in the highest version", linger, m, giop.EnvelopeOf(m).Version)
		}
		if linger {
			// The lingering server reads what the client still sends.
			if _, err := client.Write([]byte("more")); err != nil {
				t.Fatal(err)
			}
		}
		wantEOF(t, client)
		<-c.Gone()
	}
}

func TestSendFailureCloses(t *testing.T) {
	t.Parallel()
	server, client := pair(t)
	c := giopconn.New(server, giopconn.Options{})
	if err := c.Send(&giop.CloseConnection{Envelope: giop.Envelope{Version: giop.V12}}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := readMessage(t, client).(*giop.CloseConnection); !ok {
		t.Fatal("the message sent did not arrive")
	}
	c.Abort()
	if err := c.SendBytes([]byte("x"), time.Second); err == nil {
		t.Fatal("SendBytes on an aborted connection succeeded")
	}
	wantEOF(t, client)
}

// serveOne serves one connection on conns that enters work and waits for
// release, then leaves the work, tells left and waits for the connection
// to end, or for an abort. It returns the client's end and Serve's result.
func serveOne(t *testing.T, conns *acceptloop.Conns[*giopconn.Conn], release <-chan struct{}, left chan<- struct{}) (net.Conn, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- conns.Serve(ln, func(nc net.Conn) *giopconn.Conn {
			return giopconn.New(nc, giopconn.Options{Closing: conns.Closing})
		}, func(c *giopconn.Conn) {
			if !c.Enter() {
				return
			}
			close(entered)
			select {
			case <-release:
				c.Leave()
				close(left)
				<-c.Gone()
			case <-c.Gone(): // aborted
			}
		}, acceptloop.Options{})
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	<-entered
	return client, served
}

func TestDrainClosesIdleConnections(t *testing.T) {
	t.Parallel()
	var conns acceptloop.Conns[*giopconn.Conn]
	release, left := make(chan struct{}), make(chan struct{})
	client, served := serveOne(t, &conns, release, left)
	close(release)
	<-left
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := giopconn.Drain(ctx, &conns); err != nil {
		t.Fatalf("Drain = %v, want nil", err)
	}
	if err := <-served; !errors.Is(err, acceptloop.ErrClosing) {
		t.Fatalf("Serve after Drain = %v, want ErrClosing", err)
	}
	if _, ok := readMessage(t, client).(*giop.CloseConnection); !ok {
		t.Fatal("the idle connection was not closed with CloseConnection")
	}
	wantEOF(t, client)
}

func TestDrainAbortsWhenContextEnds(t *testing.T) {
	t.Parallel()
	var conns acceptloop.Conns[*giopconn.Conn]
	client, served := serveOne(t, &conns, make(chan struct{}), make(chan struct{}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The connection is busy until Drain has aborted it.
	if err := giopconn.Drain(ctx, &conns); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain = %v, want context.Canceled", err)
	}
	if err := <-served; !errors.Is(err, acceptloop.ErrClosing) {
		t.Fatalf("Serve after Drain = %v, want ErrClosing", err)
	}
	wantEOF(t, client) // aborted: no CloseConnection
}
