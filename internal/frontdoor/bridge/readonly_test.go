package bridge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// drainObserved forgets the calls observed so far.
func drainObserved(e *env) {
	for {
		select {
		case <-e.g.observed:
		default:
			return
		}
	}
}

// TestReadOnlyGoesOnlyToReplicasThatAppliedTheSessionsLastWrite: while r2
// lags, a session's read-only calls go to r1 only, and see its write;
// calls of a client that wrote nothing go to both; once r2 has caught up,
// the session's calls go to both.
func TestReadOnlyGoesOnlyToReplicasThatAppliedTheSessionsLastWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 2, replicated: protocol.Replicated{ReadOnly: []string{"GET /value"}}})
	r2 := e.reps[1]
	r2.pause()
	c := e.client(t)
	if a := e.do(t, c, http.MethodPost, "/increment", session("s", 1), nil); a.status != http.StatusOK || a.position(t) != 1 {
		t.Fatalf("write: %d %s", a.status, a.body)
	}
	drainObserved(e)
	read := func(c *http.Client, h map[string]string) (int64, string) {
		t.Helper()
		a := e.do(t, c, http.MethodGet, "/value", h, nil)
		if a.status != http.StatusOK {
			t.Fatalf("GET /value: %d %s", a.status, a.body)
		}
		return a.value(t), recvObserved(t, e)
	}
	reader := map[string]string{protocol.HeaderSession: "s"}
	for range 6 {
		if v, id := read(c, reader); v != 1 || id != "r1" {
			t.Fatalf("session s read %d from %s while r2 lags: want 1 from r1", v, id)
		}
	}

	// A client with nothing written reads from either.
	seen := map[string]int64{}
	fresh := e.client(t)
	for range 4 {
		v, id := read(fresh, nil)
		seen[id] = v
	}
	if len(seen) != 2 || seen["r1"] != 1 || seen["r2"] != 0 {
		t.Fatalf("a fresh client read %v, want r1 at 1 and r2 at 0", seen)
	}

	// A plain client's connection is its session: it reads its writes.
	plain := e.client(t)
	if a := e.do(t, plain, http.MethodPost, "/increment", nil, nil); a.status != http.StatusOK || a.position(t) != 2 {
		t.Fatalf("plain write: %d %s", a.status, a.body)
	}
	for range 4 {
		if v, id := read(plain, nil); v != 2 || id != "r1" {
			t.Fatalf("plain client read %d from %s after its write: want 2 from r1", v, id)
		}
	}

	r2.resume()
	r2.waitApplied(t, 2)
	seen = map[string]int64{}
	for range 4 {
		v, id := read(c, reader)
		seen[id] = v
	}
	if len(seen) != 2 || seen["r1"] != 2 || seen["r2"] != 2 {
		t.Fatalf("after r2 caught up, session s read %v, want 2 from both", seen)
	}
	if pos := e.nextPosition(t, "after"); pos != 3 {
		t.Fatalf("next position %d, want 3: read-only calls were appended", pos)
	}
}

// TestReadOnlyWaitsForACatchUp: with the only live replica behind the
// session's last write, a read-only call waits for it to catch up, and is
// answered 503 when it does not within the request timeout.
func TestReadOnlyWaitsForACatchUp(t *testing.T) {
	t.Parallel()
	looked := make(chan string, 64)
	e := newEnv(t, envConfig{replicas: 2, replicated: protocol.Replicated{ReadOnly: []string{"GET /value"}},
		timeouts: protocol.Timeouts{Request: protocol.Duration(300 * time.Millisecond)},
		wrap:     func(o Orderer) Orderer { return &watchedOrderer{Orderer: o, looked: looked} }})
	r1, r2 := e.reps[0], e.reps[1]
	r2.pause()
	c := e.client(t)
	if a := e.do(t, c, http.MethodPost, "/increment", session("s", 1), nil); a.status != http.StatusOK {
		t.Fatalf("write: %d %s", a.status, a.body)
	}
	r1.live.Store(false)
	e.g.publish()

	a := e.do(t, c, http.MethodGet, "/value", map[string]string{protocol.HeaderSession: "s"}, nil)
	if a.status != http.StatusServiceUnavailable {
		t.Fatalf("GET with only a lagging replica: %d %s, want 503", a.status, a.body)
	}
	if d := a.errorDetail(t); d.Code != CodeNoReplica || !strings.Contains(d.Reason, "applied position 1") {
		t.Fatalf("503 %+v, want %s naming position 1", d, CodeNoReplica)
	}

	for len(looked) > 0 {
		<-looked
	}
	e.g.timeouts = protocol.Timeouts{Request: protocol.Duration(waitBound)}
	e.g.publish()
	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := e.try(c, http.MethodGet, "/value", map[string]string{protocol.HeaderSession: "s"}, nil)
		done <- result{a, err}
	}()
	// The call looks at r2 twice (it picked, waited, picked again)
	// before r2 catches up.
	for range 2 {
		select {
		case <-looked:
		case <-time.After(waitBound):
			t.Fatal("the read-only call did not look at the replicas")
		}
	}
	r2.resume()
	var res result
	select {
	case res = <-done:
	case <-time.After(waitBound):
		t.Fatal("the read-only call did not end")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	a = res.a
	if a.status != http.StatusOK || a.value(t) != 1 {
		t.Fatalf("GET once r2 caught up: %d %s, want 1", a.status, a.body)
	}
}

// watchedOrderer is the hub, telling each look at a replica's applied
// position.
type watchedOrderer struct {
	Orderer
	looked chan string
}

func (w *watchedOrderer) AppliedBy(replica string) uint64 {
	select {
	case w.looked <- replica:
	default:
	}
	return w.Orderer.AppliedBy(replica)
}

// TestReadOnlyCallToADeadReplicaIs502: a read-only call the replica does
// not answer is answered 502 and observed as a failure.
func TestReadOnlyCallToADeadReplicaIs502(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 1, replicated: protocol.Replicated{ReadOnly: []string{"GET /value"}}})
	e.reps[0].srv.Close()
	a := e.do(t, e.client(t), http.MethodGet, "/value", nil, nil)
	if a.status != http.StatusBadGateway {
		t.Fatalf("%d %s, want 502", a.status, a.body)
	}
	if d := a.errorDetail(t); d.Code != CodeBadGateway || !strings.Contains(d.Reason, "connect") {
		t.Fatalf("502 %+v, want %s saying the connection failed", d, CodeBadGateway)
	}
	if id := recvObserved(t, e); id != "r1" || e.g.counters["r1"].Failures.Load() != 1 {
		t.Fatalf("observed %s with %d failures, want r1 failed once", id, e.g.counters["r1"].Failures.Load())
	}
}
