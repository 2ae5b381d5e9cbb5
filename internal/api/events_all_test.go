package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// testInstance is the instance name of the balancers of these tests: the
// prefix of their event ids.
const testInstance = "fulcrum-t"

// eventSeq reads "<testInstance>-<seq>" strictly; ok is false for
// anything else.
func eventSeq(id string) (uint64, bool) {
	n, found := strings.CutPrefix(id, testInstance+"-")
	seq, err := strconv.ParseUint(n, 10, 64)
	return seq, found && err == nil && strconv.FormatUint(seq, 10) == n
}

// eventID is the id of seq.
func eventID(seq uint64) string { return testInstance + "-" + strconv.FormatUint(seq, 10) }

// allStream reads GET /v1/events and checks its contract on every event:
// ids are "<instance>-<seq>" and the same in the SSE id and the data, seqs
// never go back, and a seq that skips ahead comes only with a "status"
// (no event is lost silently). Not safe for concurrent use.
type allStream struct {
	t      *testing.T
	ch     <-chan sseEvent
	last   uint64
	cancel context.CancelFunc
}

func (e *env) openAll(ctx context.Context, lastID string) *allStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	hdr := http.Header{"Authorization": {"Bearer " + adminToken}}
	if lastID != "" {
		hdr.Set("Last-Event-ID", lastID)
	}
	ch, resp := e.openStream(ctx, "/v1/events", hdr)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		e.t.Fatalf("GET /v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &allStream{t: e.t, ch: ch, cancel: cancel}
	s.last, _ = eventSeq(lastID)
	return s
}

// next returns the next event (heartbeats skipped) and its decoded data.
func (s *allStream) next(ctx context.Context) (sseEvent, balancer.Event) {
	s.t.Helper()
	for {
		select {
		case <-ctx.Done():
			s.t.Fatal("no event before the deadline")
		case ev, ok := <-s.ch:
			if !ok {
				s.t.Fatal("stream ended")
			}
			if ev.event == "" {
				continue
			}
			var be balancer.Event
			if err := json.Unmarshal(ev.data, &be); err != nil {
				s.t.Fatalf("event %q: %v", ev.data, err)
			}
			id, ok := eventSeq(ev.id)
			if !ok || ev.id != be.ID {
				s.t.Fatalf("event %s id %q, data id %q: want both %s-<seq>", ev.event, ev.id, be.ID, testInstance)
			}
			switch {
			case ev.event == "status" && id >= s.last:
			case ev.event != "status" && id == s.last+1:
			default:
				s.t.Fatalf("%s event id %d after id %d: a gap or a duplicate", ev.event, id, s.last)
			}
			s.last = id
			return ev, be
		}
	}
}

// until reads events until one satisfies f, and returns it.
func (s *allStream) until(ctx context.Context, f func(sseEvent, balancer.Event) bool) balancer.Event {
	s.t.Helper()
	for {
		ev, be := s.next(ctx)
		if f(ev, be) {
			return be
		}
	}
}

func TestAllEventsInterleave(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken, Heartbeat: 10 * time.Millisecond}, balancer.Options{Instance: testInstance})
	e.mustGroup("a", nil)
	e.mustGroup("b", nil)
	ra := e.mustRegister("a", "http://127.0.0.1:9001")
	rb := e.mustRegister("b", "http://127.0.0.1:9002")
	ctx := boundedContext(t)

	s := e.openAll(ctx, "")
	defer s.cancel()
	if ev, be := s.next(ctx); ev.event != "status" {
		t.Fatalf("first event %s, want status", ev.event)
	} else if d, _ := be.Data.(map[string]any); len(d["groups"].([]any)) != 2 {
		t.Fatalf("status %s, want both groups", ev.data)
	}
	want(t, e.call("POST", "/v1/report", ra.Token, `{"load":7}`), http.StatusOK)
	want(t, e.call("POST", "/v1/report", rb.Token, `{"load":3}`), http.StatusOK)
	seen := map[string]bool{}
	s.until(ctx, func(ev sseEvent, be balancer.Event) bool {
		if ev.event == "step" {
			seen[be.Group] = true
		}
		return seen["a"] && seen["b"]
	})

	e.mustGroup("c", nil)
	s.until(ctx, func(_ sseEvent, be balancer.Event) bool { return be.Type == "group-created" && be.Group == "c" })
	want(t, e.call("DELETE", "/v1/groups/c", adminToken, nil), http.StatusNoContent)
	s.until(ctx, func(_ sseEvent, be balancer.Event) bool { return be.Type == "group-deleted" && be.Group == "c" })
}

func TestAllEventsResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{Instance: testInstance})
	e.mustGroup("a", nil)
	r := e.mustRegister("a", "http://127.0.0.1:9001")
	ctx := boundedContext(t)

	s := e.openAll(ctx, "")
	s.next(ctx) // status
	want(t, e.call("POST", "/v1/groups/a/replicas/"+r.ID+"/drain", adminToken, nil), http.StatusOK)
	s.until(ctx, func(ev sseEvent, _ balancer.Event) bool { return ev.event == "membership" })
	last := s.last
	s.cancel()

	// Events while away: the resumed stream has them all, from last+1,
	// with no status first (next checks every id).
	want(t, e.call("POST", "/v1/groups/a/replicas/"+r.ID+"/activate", adminToken, nil), http.StatusOK)
	e.mustGroup("b", nil)
	s = e.openAll(ctx, eventID(last))
	defer s.cancel()
	if ev, _ := s.next(ctx); ev.event == "status" || s.last != last+1 {
		t.Fatalf("resumed with %s id %d, want id %d", ev.event, s.last, last+1)
	}
	s.until(ctx, func(_ sseEvent, be balancer.Event) bool { return be.Type == "group-created" && be.Group == "b" })

	// An id ahead of the sequence, another instance's (a client that
	// reconnected here from there), the old numeric form, or not an id at
	// all, starts afresh.
	for _, id := range []string{eventID(999999999), "fulcrum-u-" + strconv.FormatUint(last, 10), strconv.FormatUint(last, 10), "x"} {
		s := e.openAll(ctx, id)
		s.last = 0
		if ev, _ := s.next(ctx); ev.event != "status" {
			t.Errorf("Last-Event-ID %s: first event %s, want status", id, ev.event)
		}
		s.cancel()
	}
}

// TestAllEventsOverflow: a reader that does not read does not hold the
// balancer up, and a reader whose id is older than the kept events gets a
// status first, then the live events.
func TestAllEventsOverflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{Instance: testInstance})
	e.mustGroup("a", map[string]any{"report_interval": "1h"})
	r := e.mustRegister("a", "http://127.0.0.1:9001")
	ctx := boundedContext(t)

	stalled := e.openAll(ctx, "") // never read until the end
	defer stalled.cancel()
	first := e.openAll(ctx, "")
	first.next(ctx) // status
	old := first.last
	first.cancel()

	// More events than the balancer keeps, each bounded by ctx: none waits
	// for the stalled reader.
	for i := 0; i <= balancer.EventReplay/2; i++ {
		if err := e.b.Drain("a", r.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.b.Activate("a", r.ID); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("the balancer was held up")
		}
	}
	if _, err := e.b.Report(r.Token, protocol.Report{Load: 1}); err != nil {
		t.Fatal(err)
	}
	want(t, e.call("PATCH", "/v1/groups/a", adminToken, map[string]any{"strategy": strategy.RoundRobinName}), http.StatusOK)

	s := e.openAll(ctx, eventID(old))
	defer s.cancel()
	if ev, _ := s.next(ctx); ev.event != "status" || s.last <= old+balancer.EventReplay {
		t.Fatalf("Last-Event-ID %d: first event %s id %d, want a status past %d", old, ev.event, s.last, old+balancer.EventReplay)
	}
	// The stalled reader, read at last, has every event or a status where
	// it fell behind (next checks), up to the PATCH's config event.
	stalled.until(ctx, func(_ sseEvent, be balancer.Event) bool { return be.Type == "config" })
}

// TestGroupEventsResume: a group's stream takes its ids from the same
// sequence, carries only its group's events, and resumes after
// Last-Event-ID as /v1/events does.
func TestGroupEventsResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{Instance: testInstance})
	e.mustGroup("a", map[string]any{"report_interval": "1h"})
	e.mustGroup("b", map[string]any{"report_interval": "1h"})
	ra := e.mustRegister("a", "http://127.0.0.1:9001")
	rb := e.mustRegister("b", "http://127.0.0.1:9002")
	ctx := boundedContext(t)
	auth := http.Header{"Authorization": {"Bearer " + adminToken}}

	_, resp := e.openStream(ctx, "/v1/events", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/events without a token: %d, want 401", resp.StatusCode)
	}
	resp.Body.Close()

	sctx, cancel := context.WithCancel(ctx)
	events, _ := e.openStream(sctx, "/v1/groups/a/events", auth)
	status := awaitEvent(ctx, t, events, "status")
	if status.id == "" {
		t.Fatal("status without an id")
	}
	want(t, e.call("POST", "/v1/groups/a/replicas/"+ra.ID+"/drain", adminToken, nil), http.StatusOK)
	last := awaitEvent(ctx, t, events, "membership").id
	cancel()
	for range events {
	}

	want(t, e.call("POST", "/v1/groups/b/replicas/"+rb.ID+"/drain", adminToken, nil), http.StatusOK)
	want(t, e.call("POST", "/v1/groups/a/replicas/"+ra.ID+"/activate", adminToken, nil), http.StatusOK)
	auth.Set("Last-Event-ID", last)
	events, _ = e.openStream(ctx, "/v1/groups/a/events", auth)
	var first sseEvent
	for first = range events {
		if first.event != "" {
			break
		}
	}
	var be balancer.Event
	if err := json.Unmarshal(first.data, &be); err != nil || first.event != "membership" || be.Group != "a" {
		t.Fatalf("resumed after %s with %s %s: %v", last, first.event, first.data, err)
	}
	prev, _ := eventSeq(last)
	if id, ok := eventSeq(first.id); !ok || id <= prev+1 {
		t.Fatalf("resumed with id %d after %d: b's event between must be skipped, not a's replayed", id, prev)
	}
	want(t, e.call("DELETE", "/v1/groups/a", adminToken, nil), http.StatusNoContent)
	awaitEvent(ctx, t, events, "closed")
	for range events {
	}
}
