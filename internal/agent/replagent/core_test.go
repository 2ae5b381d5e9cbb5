package replagent_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

const src = "http://instance-a:7070"

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func hello(trim uint64, peers ...protocol.LogPeer) protocol.LogEvent {
	return protocol.LogEvent{Type: protocol.LogEventHello, Position: trim, Peers: peers}
}

func entry(pos uint64, replyTo string) protocol.LogEvent {
	return protocol.LogEvent{Type: protocol.LogEventEntry, Position: pos, ReplyTo: replyTo,
		Request: &protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: http.MethodPost, Target: "/increment", Time: t0, Seed: pos}}
}

func reply(pos uint64) protocol.ReplicaReply {
	return protocol.ReplicaReply{Position: pos, Status: 200, Body: []byte(`{"value":` + string(rune('0'+pos%10)) + `}`)}
}

// apply steps ev and, for a delivery, records reply(pos).
func apply(t *testing.T, c *replagent.Core, ev protocol.LogEvent, now time.Time) replagent.Action {
	t.Helper()
	act := c.Step(ev, src, now)
	if act.Kind == replagent.ActDeliver {
		c.Delivered(act.Position, act.ReplyTo, reply(act.Position), now)
	}
	return act
}

func TestCoreDeliversEachEntryOnceInOrderAcrossGaps(t *testing.T) {
	t.Parallel()
	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1"})
	if act := apply(t, c, hello(0), t0); act.Kind != replagent.ActContinue {
		t.Fatalf("hello of an empty log: got %+v, want continue", act)
	}
	var delivered []uint64
	for _, ev := range []protocol.LogEvent{entry(3, ""), entry(7, "http://instance-b:7070"), entry(3, ""), entry(8, ""), entry(7, "")} {
		act := apply(t, c, ev, t0)
		if act.Kind == replagent.ActDeliver {
			delivered = append(delivered, act.Position)
		}
	}
	if want := []uint64{3, 7, 8}; !slices.Equal(delivered, want) {
		t.Fatalf("delivered %v, want %v (positions may be sparse; a resent entry is not delivered again)", delivered, want)
	}
	if c.Applied() != 8 {
		t.Fatalf("applied %d, want 8", c.Applied())
	}
	out := c.TakeOutbox()
	var tos []string
	for _, o := range out {
		tos = append(tos, o.To)
	}
	if want := []string{src, "http://instance-b:7070", src}; strings.Join(tos, " ") != strings.Join(want, " ") {
		t.Fatalf("replies posted to %v, want %v (reply_to, else the streaming instance)", tos, want)
	}
	if len(c.TakeOutbox()) != 0 {
		t.Fatal("TakeOutbox did not forget what it returned")
	}
}

func TestCoreStopsOnAnEntryItCannotDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   protocol.LogEvent
		want string
	}{
		{"no request", protocol.LogEvent{Type: protocol.LogEventEntry, Position: 12}, "position 12"},
		{"undecodable error event", protocol.LogEvent{Type: protocol.LogEventError, Code: protocol.CodeUndecodable, Position: 13, Message: "bad json"}, "position 13"},
		{"unknown error code", protocol.LogEvent{Type: protocol.LogEventError, Code: "weird", Position: 14}, `"weird"`},
		{"position 0", protocol.LogEvent{Type: protocol.LogEventEntry, Position: 0, Request: &protocol.OrderedRequest{}}, "position 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := replagent.NewCore(replagent.CoreConfig{Group: "g", Applied: 11})
			act := c.Step(tt.ev, src, t0)
			if act.Kind != replagent.ActStop || act.Err == nil || !strings.Contains(act.Err.Error(), tt.want) {
				t.Fatalf("got %+v, want a stop naming %s", act, tt.want)
			}
			if c.Applied() != 11 {
				t.Fatalf("applied moved to %d", c.Applied())
			}
		})
	}
}

func TestCoreJoinsByStateTransferFromTheMostAdvancedPeer(t *testing.T) {
	t.Parallel()
	peers := []protocol.LogPeer{
		{ID: "r1", Address: "http://self", Applied: 90}, // itself: never
		{ID: "r2", Address: "http://r2", Applied: 50},
		{ID: "r3", Address: "http://r3", Applied: 80},
		{ID: "r4", Address: "http://r4", Applied: 0},  // nothing to give
		{ID: "r5", Address: "http://r5", Applied: 20}, // below the trim point
	}
	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 10, CanCheckpoint: true})
	act := c.Step(hello(30, peers...), src, t0)
	if act.Kind != replagent.ActTransfer || act.Peer.ID != "r3" {
		t.Fatalf("join: got %+v, want a transfer from r3", act)
	}
	act = c.TransferFailed("r3", errTest)
	if act.Kind != replagent.ActTransfer || act.Peer.ID != "r2" {
		t.Fatalf("after r3 failed: got %+v, want a transfer from r2", act)
	}
	act = c.TransferFailed("r2", errTest)
	if act.Kind != replagent.ActStop || !strings.Contains(act.Err.Error(), "trimmed up to position 30") || !strings.Contains(act.Err.Error(), "state transfer") {
		t.Fatalf("no peer left, log trimmed above applied: got %+v, want a stop saying so", act)
	}

	c = replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 10, CanCheckpoint: true})
	c.Step(hello(30, peers...), src, t0)
	c.Transferred(80)
	if c.Applied() != 80 {
		t.Fatalf("applied after a transfer at 80: %d", c.Applied())
	}
	if act := apply(t, c, entry(80, ""), t0); act.Kind != replagent.ActContinue {
		t.Fatalf("entry 80 after a transfer at 80: got %+v, want it skipped as applied", act)
	}
	if act := apply(t, c, entry(81, ""), t0); act.Kind != replagent.ActDeliver {
		t.Fatalf("entry 81 after a transfer at 80: got %+v, want a delivery", act)
	}
	if act := c.Step(hello(30, peers...), src, t0); act.Kind != replagent.ActContinue {
		t.Fatalf("a reconnection's hello: got %+v, want no second transfer", act)
	}
}

func TestCoreTransferFailureFallsBackToReplayWhenTheLogHasIt(t *testing.T) {
	t.Parallel()
	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 10, CanCheckpoint: true})
	act := c.Step(hello(5, protocol.LogPeer{ID: "r2", Address: "http://r2", Applied: 40}), src, t0)
	if act.Kind != replagent.ActTransfer {
		t.Fatalf("got %+v, want a transfer", act)
	}
	if act := c.TransferFailed("r2", errTest); act.Kind != replagent.ActContinue {
		t.Fatalf("got %+v, want a replay from 11 (the log is trimmed only to 5)", act)
	}
}

func TestCoreWithoutCheckpointsResumesOrStopsAtTheTrimPoint(t *testing.T) {
	t.Parallel()
	peer := protocol.LogPeer{ID: "r2", Address: "http://r2", Applied: 40}
	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 10})
	if act := c.Step(hello(10, peer), src, t0); act.Kind != replagent.ActContinue {
		t.Fatalf("trim point at applied: got %+v, want a replay from 11", act)
	}
	c = replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 10})
	act := c.Step(hello(11, peer), src, t0)
	if act.Kind != replagent.ActStop {
		t.Fatalf("trim point above applied: got %+v, want a stop", act)
	}
	for _, want := range []string{"trimmed up to position 11", "applied only up to 10", "cannot transfer state", "must be reset with state transfer"} {
		if !strings.Contains(act.Err.Error(), want) {
			t.Errorf("error %q does not say %q", act.Err, want)
		}
	}
}

func TestCoreResyncsOnATrimmedStream(t *testing.T) {
	t.Parallel()
	trimmed := protocol.LogEvent{Type: protocol.LogEventError, Code: protocol.CodeTrimmed, Position: 60}
	peer := protocol.LogPeer{ID: "r2", Address: "http://r2", Applied: 70}

	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 50, CanCheckpoint: true})
	c.Step(hello(40), src, t0) // joined, no peer yet: replay
	c.Step(hello(40, peer), src, t0)
	if act := c.Step(trimmed, src, t0); act.Kind != replagent.ActTransfer || act.Peer.ID != "r2" {
		t.Fatalf("trimmed with a peer: got %+v, want a transfer from r2", act)
	}

	c = replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 50})
	c.Step(hello(40, peer), src, t0)
	if act := c.Step(trimmed, src, t0); act.Kind != replagent.ActStop || !strings.Contains(act.Err.Error(), "trimmed up to position 60") {
		t.Fatalf("trimmed without checkpoints: got %+v, want a stop", act)
	}

	c = replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", Applied: 65})
	c.Step(hello(40), src, t0)
	if act := c.Step(trimmed, src, t0); act.Kind != replagent.ActContinue {
		t.Fatalf("trimmed below applied: got %+v, want nothing", act)
	}
}

func TestCoreAnswersReplyRequestsFromItsCache(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Self: "r1", KeepReplies: 3, KeepFor: 10 * time.Minute})
	c.Step(hello(0), src, clk.Now())
	for pos := uint64(1); pos <= 5; pos++ {
		apply(t, c, entry(pos, ""), clk.Now())
		clk.Advance(time.Minute)
	}
	c.TakeOutbox()
	ask := func(pos uint64) replagent.Outgoing {
		t.Helper()
		c.Step(protocol.LogEvent{Type: protocol.LogEventReplyRequest, Position: pos, ReplyTo: "http://instance-b:7070"}, src, clk.Now())
		out := c.TakeOutbox()
		if len(out) != 1 || out[0].To != "http://instance-b:7070" || out[0].Reply.Position != pos {
			t.Fatalf("reply request %d: outbox %+v, want one reply to instance-b", pos, out)
		}
		return out[0]
	}
	if o := ask(2); !o.Reply.Evicted {
		t.Fatalf("reply 2 of 5 with room for 3: got %+v, want evicted", o.Reply)
	}
	if o := ask(4); o.Reply.Evicted || string(o.Reply.Body) != string(reply(4).Body) || o.Reply.Status != 200 {
		t.Fatalf("reply 4: got %+v, want the cached reply", o.Reply)
	}
	clk.Advance(8 * time.Minute) // reply 4 was cached at +3m, reply 5 at +4m; now is +13m
	if o := ask(4); !o.Reply.Evicted {
		t.Fatalf("reply 4 after 10 minutes: got %+v, want evicted", o.Reply)
	}
	if o := ask(5); o.Reply.Evicted {
		t.Fatalf("reply 5 after 9 minutes: got %+v, want the cached reply", o.Reply)
	}

	// A request for a reply not applied yet is answered when it is.
	c.Step(protocol.LogEvent{Type: protocol.LogEventReplyRequest, Position: 9, ReplyTo: "http://instance-c:7070"}, src, clk.Now())
	if out := c.TakeOutbox(); len(out) != 0 {
		t.Fatalf("reply request ahead of applied: posted %+v at once", out)
	}
	apply(t, c, entry(9, "http://instance-b:7070"), clk.Now())
	out := c.TakeOutbox()
	if len(out) != 2 || out[0].To != "http://instance-b:7070" || out[1].To != "http://instance-c:7070" || out[1].Reply.Position != 9 || out[1].Reply.Evicted {
		t.Fatalf("entry 9 applied: outbox %+v, want its reply to instance-b and to instance-c", out)
	}

	// One waiting for a position a state transfer passes is answered evicted.
	c.Step(protocol.LogEvent{Type: protocol.LogEventReplyRequest, Position: 12}, src, clk.Now())
	c.Transferred(20)
	out = c.TakeOutbox()
	if len(out) != 1 || out[0].To != src || out[0].Reply.Position != 12 || !out[0].Reply.Evicted {
		t.Fatalf("transfer past a waiting reply request: outbox %+v, want 12 evicted to the streaming instance", out)
	}
}

func TestCoreIgnoresHeartbeatsAndUnknownEvents(t *testing.T) {
	t.Parallel()
	c := replagent.NewCore(replagent.CoreConfig{Group: "g", Applied: 3})
	for _, ev := range []protocol.LogEvent{{Type: protocol.LogEventHeartbeat}, {Type: "future-kind"}, {Type: protocol.LogEventError, Code: "closed"}, {Type: protocol.LogEventError, Code: "unavailable"}} {
		if act := c.Step(ev, src, t0); act.Kind != replagent.ActContinue {
			t.Fatalf("%+v: got %+v, want nothing", ev, act)
		}
	}
	if c.Applied() != 3 || len(c.TakeOutbox()) != 0 {
		t.Fatal("a heartbeat changed the core")
	}
}

var errTest = errorString("connection refused")

type errorString string

func (e errorString) Error() string { return string(e) }
