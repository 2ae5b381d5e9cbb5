package bridge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestConcurrentClientsEachGetTheReplyToTheirOwnRequest: protocol-aware,
// idempotency-keyed and plain clients call POST /increment at once; every
// call is answered once, with the reply to its own entry (a counter at
// position p answers p: every entry adds one), and every replica applies
// every request once, into equal states.
func TestConcurrentClientsEachGetTheReplyToTheirOwnRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 3})
	const perClient = 15
	kinds := []string{"session", "session", "session", "key", "key", "plain", "plain", "plain"}
	type result struct {
		pos   uint64
		value int64
	}
	results := make([][]result, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		c := e.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perClient {
				var h map[string]string
				switch kind {
				case "session":
					h = session("client-"+strconv.Itoa(i), uint64(1000*j+7)) // unordered, unique
				case "key":
					h = map[string]string{protocol.HeaderIdempotencyKey: fmt.Sprintf("key-%d-%d", i, j)}
				}
				a, err := e.try(c, http.MethodPost, "/increment", h, nil)
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("%d %s", a.status, a.body)
				}
				var r result
				if err == nil {
					r.pos, err = a.pos()
				}
				if err == nil {
					r.value, err = a.counterValue()
				}
				if err != nil {
					t.Errorf("client %d (%s) call %d: %v", i, kind, j, err)
					return
				}
				results[i] = append(results[i], r)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := uint64(len(kinds) * perClient)
	seen := map[uint64]bool{}
	for i, rs := range results {
		if len(rs) != perClient {
			t.Fatalf("client %d: %d answers, want %d", i, len(rs), perClient)
		}
		for _, r := range rs {
			if r.value != int64(r.pos) {
				t.Fatalf("client %d got value %d for its entry at position %d: not the reply to its own request", i, r.value, r.pos)
			}
			if seen[r.pos] || r.pos < 1 || r.pos > total {
				t.Fatalf("position %d answered twice or out of [1, %d]", r.pos, total)
			}
			seen[r.pos] = true
		}
	}
	var first []byte
	for _, r := range e.reps {
		r.waitApplied(t, total)
		if st := r.counter.State(); st.Increments != total || st.Value != int64(total) {
			t.Fatalf("replica %s: %+v, want %d increments", r.id, st, total)
		}
		st := r.state(t)
		if first == nil {
			first = st
		} else if !bytes.Equal(st, first) {
			t.Fatalf("replica %s's state %s differs from r1's %s: the stamps differ between replicas", r.id, st, first)
		}
	}
}

// TestRetryGetsTheOriginalReplyWithoutASecondEntry: the same session and
// sequence number, or the same idempotency key, are ordered once; a retry
// gets the original reply and position. Without headers, two calls on one
// connection are two requests, and a call on a new connection is a new
// request.
func TestRetryGetsTheOriginalReplyWithoutASecondEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 2})
	c := e.client(t)
	post := func(h map[string]string) answer {
		t.Helper()
		a := e.do(t, c, http.MethodPost, "/increment", h, nil)
		if a.status != http.StatusOK {
			t.Fatalf("POST /increment %v: %d %s", h, a.status, a.body)
		}
		return a
	}
	same := func(what string, a, b answer) {
		t.Helper()
		if a.position(t) != b.position(t) || !bytes.Equal(a.body, b.body) || a.status != b.status {
			t.Fatalf("%s: retry got %d %s at %d, the original %d %s at %d", what, b.status, b.body, b.position(t), a.status, a.body, a.position(t))
		}
	}
	a1 := post(session("s", 1))
	same("session retry", a1, post(session("s", 1)))
	k1 := post(map[string]string{protocol.HeaderIdempotencyKey: "k"})
	same("key retry", k1, post(map[string]string{protocol.HeaderIdempotencyKey: "k"}))
	// The same key under a session is that session's request, not the
	// key's.
	s2 := post(map[string]string{protocol.HeaderSession: "s", protocol.HeaderSequence: "2", protocol.HeaderIdempotencyKey: "k"})
	// Another session with the same sequence number is another request.
	o1 := post(session("other", 1))
	want := []uint64{1, 2, 3, 4}
	for i, a := range []answer{a1, k1, s2, o1} {
		if a.position(t) != want[i] || a.value(t) != int64(want[i]) {
			t.Fatalf("request %d: position %d value %d, want %d", i, a.position(t), a.value(t), want[i])
		}
	}

	// A plain client: its connection is the session.
	plain := e.client(t)
	p1 := e.do(t, plain, http.MethodPost, "/increment", nil, nil)
	p2 := e.do(t, plain, http.MethodPost, "/increment", nil, nil)
	plain.CloseIdleConnections()
	p3 := e.do(t, plain, http.MethodPost, "/increment", nil, nil)
	for i, a := range []answer{p1, p2, p3} {
		if a.status != http.StatusOK || a.position(t) != uint64(5+i) {
			t.Fatalf("plain call %d: %d %s at %s, want 200 at %d", i, a.status, a.body, a.header.Get(protocol.HeaderPosition), 5+i)
		}
	}
	for _, r := range e.reps {
		r.waitApplied(t, 7)
		if n := r.counter.State().Increments; n != 7 {
			t.Fatalf("replica %s executed %d requests, want 7 (retries executed again?)", r.id, n)
		}
	}
	if pos := e.nextPosition(t, "after"); pos != 8 {
		t.Fatalf("next position %d, want 8", pos)
	}
	if st := a1.header.Get("Server-Timing"); !strings.Contains(st, "append;dur=") || !strings.Contains(st, "wait;dur=") {
		t.Fatalf("Server-Timing %q: want append and wait", st)
	}
	if log := e.acc.String(); !strings.Contains(log, `method=POST path="/increment" proto=HTTP/1.1 status=200 replica=r`) {
		t.Fatalf("access log has no line for an ordered call with its replica:\n%s", log)
	}
}

// TestRetryOfAnExpiredReplyIs409: a retry of an applied request whose
// reply every live replica evicted is answered 409 reply_expired, naming
// the position; it is not executed again.
func TestRetryOfAnExpiredReplyIs409(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1})
	c := e.client(t)
	if a := e.do(t, c, http.MethodPost, "/increment", session("s", 1), nil); a.status != http.StatusOK {
		t.Fatalf("first call: %d %s", a.status, a.body)
	}
	e.reps[0].evictReplies()
	a := e.do(t, c, http.MethodPost, "/increment", session("s", 1), nil)
	if a.status != http.StatusConflict {
		t.Fatalf("retry after eviction: %d %s, want 409", a.status, a.body)
	}
	d := a.errorDetail(t)
	if d.Code != protocol.CodeReplyExpired || !strings.Contains(d.Message, "position 1") || a.header.Get(protocol.HeaderPosition) != "1" {
		t.Fatalf("409 %+v (%s %q), want %s naming position 1", d, protocol.HeaderPosition, a.header.Get(protocol.HeaderPosition), protocol.CodeReplyExpired)
	}
	if n := e.reps[0].counter.State().Increments; n != 1 {
		t.Fatalf("the replica executed %d requests, want 1", n)
	}
}

// TestEntryAboveMaxPayloadIs413: a body under max_payload whose entry (the
// request as JSON, the body in base64) is above it is refused by the log:
// 413, nothing appended.
func TestEntryAboveMaxPayloadIs413(t *testing.T) {
	t.Parallel()
	const max = 1024
	e := newEnv(t, envConfig{replicas: 1,
		replicated: protocol.Replicated{MaxPayload: max},
		limits:     replog.Limits{MaxPayload: max}})
	a := e.do(t, e.client(t), http.MethodPost, "/increment", session("s", 1), bytes.Repeat([]byte("x"), 900))
	if a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d %s, want 413", a.status, a.body)
	}
	if d := a.errorDetail(t); d.Code != protocol.CodePayloadTooLarge || !strings.Contains(d.Reason, "max_payload is 1024") {
		t.Fatalf("error %+v", d)
	}
	if pos := e.nextPosition(t, "after"); pos != 1 {
		t.Fatalf("next position %d, want 1: the refused request was appended", pos)
	}
}

// TestFullLogIs507: once the log holds max_log_bytes, requests are
// answered 507 log_full and not executed.
func TestFullLogIs507(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1, limits: replog.Limits{MaxPayload: 512, MaxLogBytes: 2048}})
	c := e.client(t)
	ok := 0
	for i := range 40 {
		a := e.do(t, c, http.MethodPost, "/increment", session("s", uint64(i)), nil)
		if a.status == http.StatusOK {
			ok++
			continue
		}
		if a.status != http.StatusInsufficientStorage {
			t.Fatalf("call %d: %d %s, want 200 or 507", i, a.status, a.body)
		}
		if d := a.errorDetail(t); d.Code != protocol.CodeLogFull || !strings.Contains(d.Reason, "max_log_bytes 2048") {
			t.Fatalf("507 %+v", d)
		}
		if ok == 0 {
			t.Fatal("the first call was refused")
		}
		e.reps[0].waitApplied(t, uint64(ok))
		if n := e.reps[0].counter.State().Increments; n != uint64(ok) {
			t.Fatalf("the replica executed %d requests, want %d (the refused one ran?)", n, ok)
		}
		return
	}
	t.Fatal("40 calls fit in a log of 2048 bytes")
}

// TestNoLiveReplicaIs503: with no live replica nothing is appended and the
// client is told to come back.
func TestNoLiveReplicaIs503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1})
	e.reps[0].live.Store(false)
	e.g.publish()
	a := e.do(t, e.client(t), http.MethodPost, "/increment", session("s", 1), nil)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "1" {
		t.Fatalf("%d (Retry-After %q) %s, want 503 with Retry-After", a.status, a.header.Get("Retry-After"), a.body)
	}
	if d := a.errorDetail(t); d.Code != CodeNoReplica || !strings.Contains(d.Reason, "0 of 1 replicas active") {
		t.Fatalf("503 %+v", d)
	}
	if pos := e.nextPosition(t, "after"); pos != 1 {
		t.Fatalf("next position %d, want 1", pos)
	}
}

// TestNoReplyWithinTheRequestTimeoutIs504: a request the replicas do not
// answer in time is answered 504; a retry once they have applied it gets
// its reply, not a second execution.
func TestNoReplyWithinTheRequestTimeoutIs504(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1, timeouts: protocol.Timeouts{Request: protocol.Duration(200 * time.Millisecond)}})
	c := e.client(t)
	e.reps[0].pause()
	a := e.do(t, c, http.MethodPost, "/increment", session("s", 1), nil)
	if a.status != http.StatusGatewayTimeout || a.errorDetail(t).Code != CodeGatewayTimeout {
		t.Fatalf("%d %s, want 504 %s", a.status, a.body, CodeGatewayTimeout)
	}
	e.reps[0].resume()
	e.reps[0].waitApplied(t, 1)
	a = e.do(t, c, http.MethodPost, "/increment", session("s", 1), nil)
	if a.status != http.StatusOK || a.position(t) != 1 || a.value(t) != 1 {
		t.Fatalf("retry: %d %s, want the reply at position 1", a.status, a.body)
	}
}

// TestStampsComeFromTheBridge: the entry's time is the bridge's clock
// (UTC) and its seed the bridge's, whatever the client sent: the
// replicas' counters record them.
func TestStampsComeFromTheBridge(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	e := newEnv(t, envConfig{replicas: 2, opts: Options{Now: func() time.Time { return at }, Seed: func() uint64 { return 42 }}})
	h := session("s", 1)
	h[protocol.HeaderTime] = "2000-01-01T00:00:00Z"
	h[protocol.HeaderSeed] = "7"
	if a := e.do(t, e.client(t), http.MethodPost, "/increment", h, nil); a.status != http.StatusOK {
		t.Fatalf("%d %s", a.status, a.body)
	}
	// The counter draws an addition's id as the first number of a PCG
	// seeded with Fulcrum-Seed.
	wantID := rand.New(rand.NewPCG(42, 0)).Uint64()
	for _, r := range e.reps {
		r.waitApplied(t, 1)
		st := r.counter.State()
		if !st.LastChanged.Equal(at) || st.LastChanged.Location() != time.UTC {
			t.Fatalf("replica %s: last_changed %v, want the bridge's clock %v in UTC", r.id, st.LastChanged, at.UTC())
		}
		if st.LastID != wantID {
			t.Fatalf("replica %s: id %d, want %d drawn from the bridge's seed 42", r.id, st.LastID, wantID)
		}
	}
	if a, b := e.reps[0].counter.State(), e.reps[1].counter.State(); a != b {
		t.Fatalf("replicas differ: %+v, %+v", a, b)
	}
}

// TestConcurrentStreamsOfOneH2CConnection: a plain client's concurrent
// HTTP/2 streams on one connection share its session, each with a
// sequence number of its own: every call is ordered once and answered with
// its own reply.
func TestConcurrentStreamsOfOneH2CConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 2})
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p, MaxConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	const calls = 24
	type result struct {
		pos   uint64
		value int64
		err   error
	}
	results := make(chan result, calls)
	for range calls {
		go func() {
			a, err := e.try(c, http.MethodPost, "/increment", nil, nil)
			r := result{err: err}
			if err == nil && a.status != http.StatusOK {
				r.err = fmt.Errorf("%d %s", a.status, a.body)
			}
			if r.err == nil {
				r.pos, r.err = a.pos()
			}
			if r.err == nil {
				r.value, r.err = a.counterValue()
			}
			results <- r
		}()
	}
	seen := map[uint64]bool{}
	for range calls {
		var r result
		select {
		case r = <-results:
		case <-time.After(waitBound):
			t.Fatal("a call did not end")
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.value != int64(r.pos) || seen[r.pos] {
			t.Fatalf("value %d at position %d (seen before: %v)", r.value, r.pos, seen[r.pos])
		}
		seen[r.pos] = true
	}
	for _, r := range e.reps {
		r.waitApplied(t, calls)
		if n := r.counter.State().Increments; n != calls {
			t.Fatalf("replica %s executed %d requests, want %d", r.id, n, calls)
		}
	}
	// One connection: every line names the same client address.
	clients := map[string]int{}
	for line := range strings.Lines(e.acc.String()) {
		if !strings.Contains(line, "proto=HTTP/2.0 status=200") {
			t.Fatalf("a call was not HTTP/2: %s", line)
		}
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "client="); ok {
				clients[v]++
			}
		}
	}
	if len(clients) != 1 {
		t.Fatalf("the calls came from %v, want one connection", clients)
	}
}
