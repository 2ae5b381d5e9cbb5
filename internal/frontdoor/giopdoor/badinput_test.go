package giopdoor_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func header(magic string, major, minor, flags, typ byte, size uint32) []byte {
	b := append([]byte(magic), major, minor, flags, typ, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[8:], size)
	if flags&1 != 0 {
		binary.LittleEndian.PutUint32(b[8:], size)
	}
	return b
}

func encoded(t *testing.T, m giop.Message) []byte {
	t.Helper()
	b, err := giop.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadInput: each kind of bad input is answered MessageError and its
// connection closed, while a connection opened before keeps working.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	for _, binding := range []string{protocol.OnDemand, protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			name := "bad-" + binding
			fd := giopGroup(t, b, protocol.Group{Name: name, Binding: binding, GIOP: protocol.GIOP{MaxMessageSize: 1024}})
			register(t, b, name, startPrime(t).String())
			good := dial(t, fd)

			fragStart := isPrimeRequest(giop.V11, cdr.BigEndian, 1, name, 3)
			fragStart.MoreFragments = true
			truncated := encoded(t, isPrimeRequest(giop.V12, cdr.BigEndian, 1, name, 3))
			truncated = truncated[:giop.HeaderSize+6]
			binary.BigEndian.PutUint32(truncated[8:], 6)
			tests := []struct {
				name    string
				in      [][]byte
				version giop.Version
			}{
				{"bad magic", [][]byte{header("POIG", 1, 2, 0, 0, 0)}, giop.V12},
				{"GIOP 1.3", [][]byte{header("GIOP", 1, 3, 0, 0, 0)}, giop.V12},
				{"GIOP 2.0", [][]byte{header("GIOP", 2, 0, 0, 0, 0)}, giop.V12},
				{"reserved flags", [][]byte{header("GIOP", 1, 2, 0x80, 0, 0)}, giop.V12},
				{"unknown message type", [][]byte{header("GIOP", 1, 2, 0, 9, 0)}, giop.V12},
				{"too large", [][]byte{header("GIOP", 1, 2, 1, 0, 1025)}, giop.V12},
				{"truncated request", [][]byte{truncated}, giop.V12},
				{"fragment of nothing", [][]byte{encoded(t, &giop.Fragment{Envelope: env(giop.V12, cdr.BigEndian), RequestID: 3, Body: make([]byte, 8)})}, giop.V12},
				{"1.1 fragments interrupted", [][]byte{encoded(t, fragStart), encoded(t, isPrimeRequest(giop.V11, cdr.BigEndian, 2, name, 3))}, giop.V11},
				{"fragment version change", [][]byte{encoded(t, fragStart), encoded(t, &giop.Fragment{Envelope: env(giop.V12, cdr.BigEndian), RequestID: 1, Body: make([]byte, 8)})}, giop.V12},
				{"reply from a client", [][]byte{encoded(t, &giop.Reply{Envelope: env(giop.V10, cdr.BigEndian), RequestID: 1})}, giop.V10},
			}
			for _, tt := range tests {
				c := dial(t, fd)
				for _, b := range tt.in {
					c.write(b)
				}
				m := c.recv()
				me, ok := m.(*giop.MessageError)
				if !ok {
					t.Fatalf("%s: answered %T, want MessageError", tt.name, m)
				}
				if me.Version != tt.version {
					t.Errorf("%s: MessageError in %v, want %v", tt.name, me.Version, tt.version)
				}
				c.eof()

				// The connection opened before is undisturbed.
				good.send(isPrimeRequest(giop.V12, cdr.BigEndian, 5, name, 5))
				if _, ok := good.recv().(*giop.Reply); !ok {
					t.Fatalf("after %s: the other connection got no reply", tt.name)
				}
			}
		})
	}
}

// TestConnectionTimeouts: a silent connection is closed after the idle
// timeout with CloseConnection; a message that starts and stalls is cut
// after the request timeout.
func TestConnectionTimeouts(t *testing.T) {
	t.Parallel()
	b := newBalancer(t)
	fd := giopGroup(t, b, protocol.Group{Timeouts: protocol.Timeouts{
		Idle: protocol.Duration(150 * time.Millisecond), Request: protocol.Duration(150 * time.Millisecond)}})
	register(t, b, "g", startPrime(t).String())

	c := dial(t, fd)
	c.send(isPrimeRequest(giop.V11, cdr.LittleEndian, 1, "g", 3))
	c.recv()
	if m, ok := c.recv().(*giop.CloseConnection); !ok || m.Version != giop.V11 || m.Order != cdr.LittleEndian {
		t.Fatalf("idle connection got %+v, want CloseConnection in the client's version and order", m)
	}
	c.eof()

	stalled := dial(t, fd)
	stalled.write(header("GIOP", 1, 2, 0, 0, 64)) // a body that never comes
	start := time.Now()
	stalled.eof()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a stalled message held the connection for %v", d)
	}
}
