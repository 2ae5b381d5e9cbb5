package giopdoor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// waitBudget waits until cond holds of the server's buffer budget.
func waitBudget(ctx context.Context, t *testing.T, b *wire.Budget, what string, cond func(wire.BudgetStats) bool) wire.BudgetStats {
	t.Helper()
	for {
		st, changed := b.Stats()
		if cond(st) {
			return st
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s: %+v", what, st)
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// Connections whose headers claim 16 MiB bodies hold only what arrived of
// them, and all half-read messages together stay within
// giop.max_buffered_bytes: at the bound the front door stops reading from
// them, and still serves a complete message on another connection. A
// large message read while the bound is reached waits, and is served once
// the connections holding the memory close. Not parallel: it measures the
// heap.
func TestHalfReadMessagesStayWithinTheBufferBound(t *testing.T) {
	const (
		bound     = 1 << 20
		attackers = 100
		sent      = 64 << 10 // body bytes each attacker sends of its 16 MiB
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := newFixedGroup(protocol.OnDemand)
	g.snap.GIOP.MaxMessageSize = 16 << 20
	g.snap.GIOP.MaxBufferedBytes = bound
	g.snap.Timeouts.Request = 0 // no body deadline: only the bound may stop reading
	g.snap.Timeouts.Idle = 0
	s := New(g, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	addr := ln.Addr().String()

	before := heapInUse()
	claim := []byte("GIOP\x01\x02\x00\x00\x01\x00\x00\x00") // a Request of 16 MiB
	var conns []net.Conn
	for range attackers {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		_ = nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(append(bytes.Clone(claim), make([]byte, sent)...)); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	st := waitBudget(ctx, t, s.budget, "reading waits for memory", func(st wire.BudgetStats) bool { return st.Waiting > 0 })
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d connections claiming 16 MiB with %d KiB sent each: %d bytes held, heap grew %d KiB", attackers, sent>>10, st.Held, grown>>10)
	// One connection at a time may go past the bound (the overdraft), by
	// no more than its message holds: at most twice what it sent.
	if st.Peak > bound+2*sent {
		t.Errorf("half-read messages held %d bytes at once, above the bound of %d and one connection's overdraft", st.Peak, bound)
	}
	// The bound, plus each connection's read buffer and first 4 KiB: far
	// below what the headers claim (1.6 GiB).
	if limit := int64(bound + attackers*64<<10 + 8<<20); grown > limit {
		t.Errorf("the heap grew by %d bytes, want at most %d", grown, limit)
	}

	// A small complete message is served at once.
	c := dialRaw(t, addr)
	loc := &giop.LocateRequest{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 3, Target: giop.KeyTarget([]byte("g"))}
	c.send(t, loc)
	if rep, ok := c.recv(t).(*giop.LocateReply); !ok || rep.RequestID != 3 || rep.Status != giop.LocateObjectForward {
		t.Fatalf("LocateRequest while the bound is reached: answer %+v, want OBJECT_FORWARD", rep)
	}

	// A large message waits for memory, and is served once it is freed.
	big := &giop.Request{Envelope: giop.Envelope{Version: giop.V12, Order: cdr.LittleEndian}, RequestID: 4, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte("g")), Operation: giop.OpIsPrime}
	big.SetBody(func(e *cdr.Encoder) { e.Long(7); e.OctetSeq(make([]byte, 256<<10)) })
	b := c.encode(t, big)
	written := make(chan error, 1)
	go func() { _, err := c.nc.Write(b); written <- err }()
	for _, nc := range conns {
		nc.Close()
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if rep, ok := c.recv(t).(*giop.Reply); !ok || rep.RequestID != 4 || rep.Status != giop.StatusLocationForward {
		t.Fatalf("the large Request after memory was freed: answer %+v, want LOCATION_FORWARD", rep)
	}
	// Connections that wait for memory notice their client is gone only
	// when they read again: at their request timeout, or when the front
	// door closes.
	_ = s.Close()
	st = waitBudget(ctx, t, s.budget, "every byte is given back", func(st wire.BudgetStats) bool { return st.Held == 0 && st.Waiting == 0 })
	if st.Peak > bound+len(b) {
		t.Errorf("half-read messages held %d bytes at once, above the bound of %d and one message of %d", st.Peak, bound, len(b))
	}
}

// rawConn is a client connection of the in-package tests.
type rawConn struct{ nc net.Conn }

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{nc: nc}
}

func (c *rawConn) encode(t *testing.T, m giop.Message) []byte {
	t.Helper()
	b, err := giop.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (c *rawConn) send(t *testing.T, m giop.Message) {
	t.Helper()
	if _, err := c.nc.Write(c.encode(t, m)); err != nil {
		t.Fatal(err)
	}
}

func (c *rawConn) recv(t *testing.T) giop.Message {
	t.Helper()
	m, err := readAnswer(c.nc)
	if err != nil {
		t.Fatalf("reading an answer: %v", err)
	}
	return m
}
