package giopagent_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// header returns a 12-byte GIOP header with the given fields (big-endian
// size unless flags say little-endian).
func header(major, minor, flags, typ byte, size uint32) []byte {
	h := []byte{'G', 'I', 'O', 'P', major, minor, flags, typ, 0, 0, 0, 0}
	if flags&1 != 0 {
		binary.LittleEndian.PutUint32(h[8:], size)
	} else {
		binary.BigEndian.PutUint32(h[8:], size)
	}
	return h
}

// TestBadInputGetsMessageError sends broken input on one connection while
// another client's connection is open: the broken one gets MessageError (in
// the version named, or 1.2 when that is unknown) and is closed; the other
// goes on calling.
func TestBadInputGetsMessageError(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	_, addr := startAgent(t, giopagent.Options{Target: s.ref, Limits: giop.Limits{MaxMessageSize: 4096}})
	good := dialRaw(t, addr)
	fragment12 := &giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 77, Body: []byte{1, 2, 3, 4}}
	orphan, err := giop.EncodeMessage(fragment12)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input []byte
		want  giop.Version
	}{
		{"bad magic", append([]byte("HTTP/1.1 200\r\n"), make([]byte, 20)...), giop.Highest},
		{"unknown version", header(1, 3, 0, 0, 0), giop.Highest},
		{"reserved flags", header(1, 2, 0x80, 0, 0), giop.V12},
		{"unknown message type", header(1, 0, 0, 9, 0), giop.V10},
		{"fragment in GIOP 1.0", header(1, 0, 0, 7, 0), giop.V10},
		{"over the size limit", header(1, 2, 0, 0, 4097), giop.V12},
		{"over the size limit, body sent", append(header(1, 2, 1, 0, 100000), make([]byte, 100000)...), giop.V12},
		{"truncated request header", append(header(1, 2, 0, 0, 6), 0, 0, 0, 1, 3, 0), giop.V12},
		{"fragment continuing nothing", orphan, giop.V12},
		{"1.1 fragment continuing nothing", append(header(1, 1, 0, 7, 4), 1, 2, 3, 4), giop.V11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			rc.sendBytes(tc.input)
			m, err := rc.tryRecv(5 * time.Second)
			if err != nil {
				t.Fatalf("no MessageError: %v", err)
			}
			if me, ok := m.(*giop.MessageError); !ok || me.Version != tc.want {
				t.Fatalf("answer %T %+v, want a GIOP %v MessageError", m, m, tc.want)
			}
			if !rc.closedByPeer(5 * time.Second) {
				t.Fatal("connection left open after MessageError")
			}
			rep := good.call(good.request(giop.V12, cdr.LittleEndian, giop.OpIsPrime, 97))
			if ok, err := rep.BooleanResult(); err != nil || !ok {
				t.Fatalf("the other client's call after bad input: %v, %v", ok, err)
			}
		})
	}
}

// TestFragmentMisuse opens a fragmented GIOP 1.1 request and sends another
// request before its last fragment: MessageError, connection closed.
func TestFragmentMisuse(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	_, addr := startAgent(t, giopagent.Options{Target: s.ref})
	rc := dialRaw(t, addr)
	req := rc.request(giop.V11, cdr.BigEndian, giop.OpIsPrime, 5)
	out, err := giop.EncodeMessage(req)
	if err != nil {
		t.Fatal(err)
	}
	pieces := splitMessage(t, out, req.BodyOffset, req.RequestID)
	rc.sendBytes(pieces[0])
	rc.send(rc.request(giop.V11, cdr.BigEndian, giop.OpIsPrime, 7))
	m, err := rc.tryRecv(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*giop.MessageError); !ok {
		t.Fatalf("answer %T, want MessageError", m)
	}
	if !rc.closedByPeer(5 * time.Second) {
		t.Fatal("connection left open after fragment misuse")
	}
}

// TestClientGoneMidMessage closes a connection in the middle of a message:
// the agent drops it without hanging and keeps serving.
func TestClientGoneMidMessage(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	_, addr := startAgent(t, giopagent.Options{Target: s.ref})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(header(1, 2, 0, 0, 1000)[:12])
	c.Write(make([]byte, 10))
	c.Close()
	rc := dialRaw(t, addr)
	if ok, err := rc.call(rc.request(giop.V10, cdr.BigEndian, giop.OpIsPrime, 3)).BooleanResult(); err != nil || !ok {
		t.Fatalf("call after a client vanished mid-message: %v, %v", ok, err)
	}
}

// TestTargetFailureClosesClient: when the target cannot be reached the
// client's connection is closed at once; when the target goes away while a
// call is in flight, the client's connection is closed too (its ORB reports
// COMM_FAILURE).
func TestTargetFailureClosesClient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startServant(t)
	dead := s.ref
	p, _ := dead.IIOP()
	p.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // nothing listens there now
	dead.Profiles = append(dead.Profiles[:0:0], p)
	_, deadAddr := startAgent(t, giopagent.Options{Target: dead})
	rc := dialRaw(t, deadAddr)
	if !rc.closedByPeer(5 * time.Second) {
		t.Fatal("client connection open although the target cannot be reached")
	}

	_, addr := startAgent(t, giopagent.Options{Target: s.ref})
	rc = dialRaw(t, addr)
	rc.send(rc.request(giop.V12, cdr.BigEndian, opHold, 1))
	waitFor(t, 5*time.Second, "the call at the servant", func() bool { return s.holding.Load() == 1 })
	s.ln.Close()
	s.closeConns()
	if !rc.closedByPeer(5 * time.Second) {
		t.Fatal("client connection open after the target connection broke")
	}
}

// TestTargetSendsGarbage: when the target answers with bytes that are not
// GIOP, the client's connection is closed (its ORB sees COMM_FAILURE)
// rather than handed the garbage.
func TestTargetSendsGarbage(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := readWhole(c); err == nil {
					c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
				}
				io.Copy(io.Discard, c)
			}()
		}
	}()
	s := startServant(t)
	target := s.ref
	p, _ := target.IIOP()
	p.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	target.Profiles = []ior.Profile{p}
	_, addr := startAgent(t, giopagent.Options{Target: target})
	rc := dialRaw(t, addr)
	rc.send(rc.request(giop.V12, cdr.BigEndian, giop.OpIsPrime, 7))
	if m, err := rc.tryRecv(5 * time.Second); err == nil {
		t.Fatalf("the client got %T from a target that speaks no GIOP", m)
	}
	if !rc.closedByPeer(5 * time.Second) {
		t.Fatal("client connection left open")
	}
}
