package client_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fakeLog stands in for a replicated group's log, shared by the group's
// fake bridges: it gives each new call (session and sequence, or
// idempotency key) the next position and a retried call its first one.
type fakeLog struct {
	mu      sync.Mutex
	entries map[string]uint64
	bodies  []string
}

// appendOrGet returns the position of the call named key, appending it
// (with body) if it is new.
func (l *fakeLog) appendOrGet(key, body string) (pos uint64, existed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.entries[key]; ok {
		return p, true
	}
	if l.entries == nil {
		l.entries = make(map[string]uint64)
	}
	l.bodies = append(l.bodies, body)
	p := uint64(len(l.bodies))
	l.entries[key] = p
	return p, false
}

func (l *fakeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.bodies)
}

// fakeBridge is a real HTTP server standing in for a replicated group's
// bridge (the real one is internal/frontdoor/bridge): it appends each call
// to its group's fakeLog, keyed by Fulcrum-Session and Fulcrum-Sequence or
// by Idempotency-Key, records what each call carried, and answers
// "<name>:<body>" with the call's Fulcrum-Position.
type fakeBridge struct {
	name string
	srv  *httptest.Server
	log  *fakeLog

	// drop is how many of the next calls to read, append and then drop
	// with the connection closed unanswered (the bridge dies
	// mid-response).
	drop atomic.Int64
	// cut is how many of the next calls to append and answer with a body
	// cut short (the connection closes after part of it).
	cut atomic.Int64
	// busy is how many of the next calls to refuse with a 503 (with
	// Retry-After unless noRetryAfter), appending nothing.
	busy         atomic.Int64
	noRetryAfter atomic.Bool
	// plain makes the bridge answer without Fulcrum-Position, as a front
	// door of a group that is not replicated (a per-request proxy).
	plain atomic.Bool
	// redirectTo, when set, makes it answer as an on-demand front door: a
	// binding 307 to that replica.
	redirectTo atomic.Pointer[fakeReplica]

	mu   sync.Mutex
	seen []seenCall
}

// seenCall is what one call that reached a bridge carried, and what the
// bridge did with it.
type seenCall struct {
	Session, Seq, Key, Client, Body string
	// Outcome is answered, dropped, cut, busy or redirected.
	Outcome string
	// Existed: the log held the call already (a re-sent call).
	Existed bool
}

func newFakeBridge(t *testing.T, name string, log *fakeLog) *fakeBridge {
	t.Helper()
	b := &fakeBridge{name: name, log: log}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *fakeBridge) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	c := seenCall{
		Session: req.Header.Get(protocol.HeaderSession),
		Seq:     req.Header.Get(protocol.HeaderSequence),
		Key:     req.Header.Get(protocol.HeaderIdempotencyKey),
		Client:  req.Header.Get(protocol.HeaderClient),
		Body:    string(body),
	}
	record := func(outcome string) {
		c.Outcome = outcome
		b.mu.Lock()
		b.seen = append(b.seen, c)
		b.mu.Unlock()
	}
	if r := b.redirectTo.Load(); r != nil {
		record("redirected")
		w.Header().Set("Location", r.base()+req.URL.RequestURI())
		w.Header().Set(protocol.HeaderGroup, testGroup)
		w.Header().Set(protocol.HeaderReplica, r.id)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	if b.busy.Add(-1) >= 0 {
		record("busy")
		if !b.noRetryAfter.Load() {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, b.name+" busy")
		return
	}
	b.busy.Store(0)
	key := "key/" + c.Key
	if c.Key == "" || c.Session != "" {
		key = c.Session + "/" + c.Seq
	}
	pos, existed := b.log.appendOrGet(key, c.Body)
	c.Existed = existed
	if b.drop.Add(-1) >= 0 {
		record("dropped")
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	b.drop.Store(0)
	answer := b.name + ":" + c.Body
	if b.cut.Add(-1) >= 0 {
		record("cut")
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s: %d\r\n\r\n%s", len(answer)+100, protocol.HeaderPosition, pos, answer)
		conn.Close()
		return
	}
	b.cut.Store(0)
	record("answered")
	if !b.plain.Load() {
		w.Header().Set(protocol.HeaderPosition, strconv.FormatUint(pos, 10))
	}
	_, _ = io.WriteString(w, answer)
}

// calls returns what the calls that reached the bridge carried.
func (b *fakeBridge) calls() []seenCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]seenCall(nil), b.seen...)
}
