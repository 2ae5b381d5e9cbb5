package replhub

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// openLog opens a real bbolt log of group g in a temporary directory.
func openLog(t *testing.T) replog.Log {
	t.Helper()
	db, err := boltlog.Open(filepath.Join(t.TempDir(), "log.db"), boltlog.Options{SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := db.Group("g", boltlog.GroupOptions{Limits: replog.Limits{MaxPayload: 4096, MaxLogBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// peers is a settable set of live replicas.
type peers struct {
	mu  sync.Mutex
	ids []string
}

func (p *peers) set(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = ids
}

func (p *peers) live() []Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Peer, len(p.ids))
	for i, id := range p.ids {
		out[i] = Peer{ID: id, Address: "http://" + id}
	}
	return out
}

type fixture struct {
	h     *Hub
	log   replog.Log
	clk   *clocktest.Manual
	live  *peers
	mu    sync.Mutex
	divs  []Divergence
	agent map[string]*agent
}

func newFixture(t *testing.T, ids ...string) *fixture {
	f := &fixture{log: openLog(t), clk: clocktest.New(t0), live: new(peers), agent: map[string]*agent{}}
	f.live.set(ids...)
	f.h = New(Options{Group: "g", Instance: "i1", Log: f.log, Live: f.live.live, Clock: f.clk,
		OnDivergence: func(d Divergence) { f.mu.Lock(); f.divs = append(f.divs, d); f.mu.Unlock() }})
	return f
}

func (f *fixture) divergences() []Divergence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Divergence(nil), f.divs...)
}

// agent plays a replica's agent in-process over the hub's real stream: a
// counter that answers every entry with its new value (plus skew, to make
// it diverge), caching its replies for reply requests unless evict is set.
type agent struct {
	id      string
	skew    int
	evict   bool
	mu      sync.Mutex
	value   int
	applied []uint64
	cache   map[uint64]protocol.ReplicaReply
	hello   chan protocol.LogEvent
	// posted receives each position whose reply the agent has posted.
	posted chan uint64
}

func (f *fixture) start(t *testing.T, id string, skew int, evict bool) *agent {
	a := &agent{id: id, skew: skew, evict: evict, cache: map[uint64]protocol.ReplicaReply{}, hello: make(chan protocol.LogEvent, 1), posted: make(chan uint64, 1024)}
	f.agent[id] = a
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ev := range f.h.Stream(ctx, id, 0) {
			switch ev.Type {
			case protocol.LogEventHello:
				a.hello <- ev
			case protocol.LogEventEntry:
				a.mu.Lock()
				a.value++
				a.applied = append(a.applied, ev.Position)
				r := protocol.ReplicaReply{Position: ev.Position, Status: 200, Body: fmt.Appendf(nil, `{"value":%d}`, a.value+a.skew)}
				if !a.evict {
					a.cache[ev.Position] = r
				}
				a.mu.Unlock()
				f.h.Replies(id, protocol.ReplyBatch{Replies: []protocol.ReplicaReply{r}})
				a.posted <- ev.Position
			case protocol.LogEventReplyRequest:
				a.mu.Lock()
				r, ok := a.cache[ev.Position]
				a.mu.Unlock()
				if !ok {
					r = protocol.ReplicaReply{Position: ev.Position, Evicted: true}
				}
				f.h.Replies(id, protocol.ReplyBatch{Replies: []protocol.ReplicaReply{r}})
			}
		}
	}()
	<-a.hello
	return a
}

func call(session string, seq uint64) Call {
	return Call{Session: session, Seq: seq, Request: &protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: "POST", Target: "/increment", Time: t0}}
}

func order(t *testing.T, h *Hub, c Call) Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := h.Order(ctx, c)
	if err != nil {
		t.Fatalf("Order(%s, %d): %v", c.Session, c.Seq, err)
	}
	return r
}

func TestOrderAnswersEachCallerWithTheFirstReplyToItsOwnRequest(t *testing.T) {
	f := newFixture(t, "r1", "r2")
	f.start(t, "r1", 0, false)
	f.start(t, "r2", 0, false)
	const n = 40
	var wg sync.WaitGroup
	got := make([]Reply, n)
	for i := range n {
		wg.Go(func() { got[i] = order(t, f.h, call(fmt.Sprintf("s%d", i%4), uint64(i))) })
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for i, r := range got {
		if r.Status != 200 || r.Duplicate || seen[r.Position] || r.Position < 1 || r.Position > n {
			t.Fatalf("call %d: reply %+v (positions seen %v)", i, r, seen)
		}
		seen[r.Position] = true
		// Each replica answers position p with value p: the reply is to
		// the caller's own entry.
		if want := fmt.Sprintf(`{"value":%d}`, r.Position); string(r.Body) != want {
			t.Fatalf("call %d at position %d got %s, want %s", i, r.Position, r.Body, want)
		}
		if f.h.LastWrite(fmt.Sprintf("s%d", i%4)) < r.Position {
			t.Fatalf("LastWrite(s%d) = %d below a write at %d", i%4, f.h.LastWrite(fmt.Sprintf("s%d", i%4)), r.Position)
		}
	}
}

func TestARetryGetsTheOriginalReplyAndIsNotAppendedAgain(t *testing.T) {
	f := newFixture(t, "r1")
	a := f.start(t, "r1", 0, false)
	first := order(t, f.h, call("s", 7))
	again := order(t, f.h, call("s", 7))
	if !again.Duplicate || again.Position != first.Position || string(again.Body) != string(first.Body) {
		t.Fatalf("retry got %+v, want the original %+v flagged duplicate", again, first)
	}
	next := order(t, f.h, call("s", 8))
	if next.Position != first.Position+1 || string(next.Body) != `{"value":2}` {
		t.Fatalf("next call got %+v: the retry was applied again", next)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.applied) != 2 {
		t.Fatalf("replica applied %v, want two entries", a.applied)
	}
}

func TestARetryWhoseReplyEveryReplicaEvictedIsReplyExpired(t *testing.T) {
	f := newFixture(t, "r1", "r2")
	f.start(t, "r1", 0, true)
	f.start(t, "r2", 0, true)
	first := order(t, f.h, call("s", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := f.h.Order(ctx, call("s", 1))
	var expired *ReplyExpiredError
	if !errors.As(err, &expired) || expired.Position != first.Position || expired.Group != "g" {
		t.Fatalf("retry: %v, want a ReplyExpiredError at position %d", err, first.Position)
	}
}

func TestOrderWithNoLiveReplicaAppendsNothing(t *testing.T) {
	f := newFixture(t)
	if _, err := f.h.Order(context.Background(), call("s", 1)); !errors.Is(err, ErrNoReplicas) {
		t.Fatalf("Order: %v, want ErrNoReplicas", err)
	}
	f.live.set("r1")
	f.start(t, "r1", 0, false)
	if r := order(t, f.h, call("s", 2)); r.Position != 1 {
		t.Fatalf("first append after the refusal at position %d, want 1", r.Position)
	}
}

func TestOrderRefusesAPayloadAboveMaxPayload(t *testing.T) {
	f := newFixture(t, "r1")
	c := call("s", 1)
	c.Request.Body = make([]byte, 8192)
	_, err := f.h.Order(context.Background(), c)
	if !errors.Is(err, replog.ErrPayloadTooLarge) {
		t.Fatalf("Order: %v, want ErrPayloadTooLarge", err)
	}
}

func TestAReplyThatBeatsOrdersBookkeepingIsKept(t *testing.T) {
	f := newFixture(t, "r1")
	f.h.Replies("r1", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: 1, Status: 201, Body: []byte("early")}}})
	r := order(t, f.h, call("s", 1))
	if r.Position != 1 || r.Status != 201 || string(r.Body) != "early" || r.Replica != "r1" {
		t.Fatalf("got %+v, want the early reply", r)
	}
}

func TestADivergentReplicaAmongThreeIsEjected(t *testing.T) {
	f := newFixture(t, "r1", "r2", "r3")
	agents := []*agent{f.start(t, "r1", 0, false), f.start(t, "r2", 5, false), f.start(t, "r3", 0, false)}
	order(t, f.h, call("s", 1))
	for _, a := range agents {
		<-a.posted // the third reply closes the comparison
	}
	divs := f.divergences()
	if len(divs) != 1 || divs[0].Replica != "r2" || !divs[0].Ejected || divs[0].Position != 1 || divs[0].Want == divs[0].Got {
		t.Fatalf("divergences %+v, want r2 ejected at position 1", divs)
	}
}

func TestTheCompareWindowClosesWithTheRepliesThatCame(t *testing.T) {
	f := newFixture(t, "r1", "r2", "r3")
	a1, a2 := f.start(t, "r1", 0, false), f.start(t, "r2", 1, false)
	order(t, f.h, call("s", 1))
	<-a1.posted
	<-a2.posted
	if divs := f.divergences(); len(divs) != 0 {
		t.Fatalf("compared before the window closed or r3 answered: %+v", divs)
	}
	f.h.maintain(context.Background(), f.clk.Advance(DefaultCompareWindow))
	// Two replies of three live replicas, differing: an alert, nobody
	// ejected.
	divs := f.divergences()
	if len(divs) != 1 || divs[0].Ejected || divs[0].Position != 1 {
		t.Fatalf("divergences %+v, want one alert at position 1", divs)
	}
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	if len(f.h.pending) != 0 {
		t.Fatalf("pending after the window: %v", f.h.pending)
	}
}

func TestCompare(t *testing.T) {
	live := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name  string
		first string
		keys  map[string]string
		want  []Divergence
	}{
		{"all equal", "a", map[string]string{"a": "x", "b": "x", "c": "x"}, nil},
		{"one of three differs", "b", map[string]string{"a": "x", "b": "y", "c": "x"},
			[]Divergence{{Group: "g", Position: 9, Replica: "b", Ejected: true, Want: "x", Got: "y"}}},
		{"two replies differ", "a", map[string]string{"a": "x", "c": "y"},
			[]Divergence{{Group: "g", Position: 9, Replica: "c", Want: "x", Got: "y"}}},
		{"no majority", "a", map[string]string{"a": "x", "b": "y", "c": "z"},
			[]Divergence{{Group: "g", Position: 9, Replica: "b", Want: "x", Got: "y"}, {Group: "g", Position: 9, Replica: "c", Want: "x", Got: "z"}}},
		{"a replica not live is not compared", "a", map[string]string{"a": "x", "b": "x", "d": "y"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare("g", 9, tc.first, tc.keys, live)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("Compare = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTrimPoint(t *testing.T) {
	ck := func(pos uint64) applied { return applied{pos: pos, checkpoints: true} }
	for _, tc := range []struct {
		name    string
		live    []string
		reports map[string]applied
		full    bool
		trimmed uint64
		want    uint64
		ok      bool
	}{
		{"no replica", nil, nil, false, 0, 0, false},
		{"one has not reported", []string{"a", "b"}, map[string]applied{"a": ck(5)}, false, 0, 0, false},
		{"lowest applied", []string{"a", "b"}, map[string]applied{"a": ck(5), "b": ck(3)}, false, 0, 3, true},
		{"already trimmed there", []string{"a", "b"}, map[string]applied{"a": ck(5), "b": ck(3)}, false, 3, 3, false},
		{"one cannot checkpoint", []string{"a", "b"}, map[string]applied{"a": ck(5), "b": {pos: 4}}, false, 0, 0, false},
		{"full forces it", []string{"a", "b"}, map[string]applied{"a": ck(5), "b": {pos: 4}}, true, 0, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := trimPoint(tc.live, tc.reports, tc.full, tc.trimmed)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("trimPoint = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestAppliedPositionsTrimTheLogAndTheHelloSaysWhere(t *testing.T) {
	f := newFixture(t, "r1", "r2")
	f.start(t, "r1", 0, false)
	f.start(t, "r2", 0, false)
	for i := range 3 {
		order(t, f.h, call("s", uint64(i)))
	}
	f.h.Applied("r1", protocol.AppliedReport{Applied: 3, Checkpoints: true})
	f.h.Applied("r2", protocol.AppliedReport{Applied: 2, Checkpoints: true})
	f.h.maintain(context.Background(), f.clk.Advance(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var events []protocol.LogEvent
	for ev := range f.h.Stream(ctx, "r3", 1) {
		events = append(events, ev)
	}
	if len(events) != 2 || events[0].Type != protocol.LogEventHello || events[0].Position != 2 ||
		events[1].Type != protocol.LogEventError || events[1].Code != protocol.CodeTrimmed || events[1].Position != 2 {
		t.Fatalf("stream from 1 after a trim to 2: %+v", events)
	}
	if p := events[0].Peers; len(p) != 2 || p[0].Applied != 3 || p[1].Applied != 2 {
		t.Fatalf("hello peers %+v, want r1 at 3 and r2 at 2", p)
	}
}

func TestAnEntryThatIsNotAnOrderedRequestEndsTheStream(t *testing.T) {
	f := newFixture(t, "r1")
	if _, _, err := f.log.AppendOrGet(context.Background(), replog.Append{Session: "s", Seq: 1, Payload: []byte("junk"), Origin: "i1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last protocol.LogEvent
	for ev := range f.h.Stream(ctx, "r1", 0) {
		last = ev
	}
	if last.Type != protocol.LogEventError || last.Code != protocol.CodeUndecodable || last.Position != 1 {
		t.Fatalf("last event %+v, want undecodable at 1", last)
	}
}

func TestAReplyRequestFromAnotherInstanceNamesWhereTheReplyGoes(t *testing.T) {
	f := newFixture(t, "r1")
	var asked []uint64
	var mu sync.Mutex
	f.h.opts.AskPeers = func(pos uint64) { mu.Lock(); asked = append(asked, pos); mu.Unlock() }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := f.h.Stream(ctx, "r1", 0)
	next, stop := iter.Pull(iter.Seq[protocol.LogEvent](events))
	defer stop()
	if ev, _ := next(); ev.Type != protocol.LogEventHello {
		t.Fatalf("first event %+v", ev)
	}
	f.h.AskFor(9, "http://10.0.0.2:9000")
	if ev, _ := next(); ev.Type != protocol.LogEventReplyRequest || ev.Position != 9 || ev.ReplyTo != "http://10.0.0.2:9000" {
		t.Fatalf("reply request %+v", ev)
	}
	// A retry here asks the peers too.
	first := make(chan Reply, 1)
	go func() {
		r, _ := f.h.Order(ctx, call("s", 1))
		first <- r
	}()
	ev, _ := next()
	if ev.Type != protocol.LogEventEntry || ev.Position != 1 {
		t.Fatalf("entry %+v", ev)
	}
	f.h.Replies("r1", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: 1, Status: 200}}})
	<-first
	go func() {
		r, _ := f.h.Order(ctx, call("s", 1))
		first <- r
	}()
	if ev, _ := next(); ev.Type != protocol.LogEventReplyRequest || ev.Position != 1 || ev.ReplyTo != "" {
		t.Fatalf("own reply request %+v", ev)
	}
	f.h.Replies("r1", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: 1, Status: 200}}})
	if r := <-first; !r.Duplicate {
		t.Fatalf("retry got %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != 1 {
		t.Fatalf("peers asked for %v, want [1]", asked)
	}
}
