package replhub

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A retried request whose reply nobody has yet (the agents that have it
// are between two streams, the instance they streamed from having died)
// is asked for again on every stream that opens, and again at every Run
// round after askAgain, of the other instances too, until the reply
// comes.
func TestARetryIsAskedAgainUntilItsReplyComes(t *testing.T) {
	f := newFixture(t, "r1")
	asked := make(chan uint64, 16)
	f.h.opts.AskPeers = func(pos uint64) { asked <- pos }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The first try: its reply came from a replica over a stream since
	// gone.
	f.h.Replies("r1", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: 1, Status: 200, Body: []byte("one")}}})
	if r := order(t, f.h, call("s", 1)); r.Position != 1 || string(r.Body) != "one" {
		t.Fatalf("first try got %+v", r)
	}

	// The retry, with no stream open: asked of the peers, nobody here.
	retry := make(chan Reply, 1)
	go func() {
		r, err := f.h.Order(ctx, call("s", 1))
		if err != nil {
			t.Errorf("retry: %v", err)
		}
		retry <- r
	}()
	if pos := <-asked; pos != 1 {
		t.Fatalf("peers asked for %d, want 1", pos)
	}

	// A round of Run before askAgain asks nobody; one after it asks the
	// peers again.
	f.h.maintain(ctx, f.clk.Now().Add(askAgain/2))
	select {
	case pos := <-asked:
		t.Fatalf("peers asked again for %d before askAgain", pos)
	default:
	}
	f.h.maintain(ctx, f.clk.Now().Add(askAgain))
	if pos := <-asked; pos != 1 {
		t.Fatalf("peers asked again for %d, want 1", pos)
	}

	// A stream that opens now (the agent back, from past the entry) is
	// asked at once.
	next, stop := iter.Pull(iter.Seq[protocol.LogEvent](f.h.Stream(ctx, "r1", 2)))
	defer stop()
	if ev, _ := next(); ev.Type != protocol.LogEventHello {
		t.Fatalf("first event %+v, want the hello", ev)
	}
	if ev, _ := next(); ev.Type != protocol.LogEventReplyRequest || ev.Position != 1 || ev.ReplyTo != "" {
		t.Fatalf("event %+v, want the reply request at 1 for this instance", ev)
	}
	f.h.Replies("r1", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: 1, Status: 200, Body: []byte("one")}}})
	if r := <-retry; !r.Duplicate || r.Position != 1 || string(r.Body) != "one" {
		t.Fatalf("retry got %+v, want the original reply flagged duplicate", r)
	}

	// Answered: asked no more.
	f.h.maintain(ctx, f.clk.Now().Add(2*askAgain))
	select {
	case pos := <-asked:
		t.Fatalf("peers asked for %d after the reply came", pos)
	default:
	}
}
