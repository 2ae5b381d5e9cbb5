package frontdoor

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func queued(t *testing.T, n, limit int, cfg protocol.Queue) (*Snapshot, *clocktest.Manual) {
	t.Helper()
	s := snapshot(n, limit)
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	q := NewQueue(func() *Snapshot { return s }, clock.Now)
	q.Configure(cfg)
	s.Queue = q
	for _, m := range s.Eligible {
		m.Queue = q
	}
	return s, clock
}

// result is what one waiting call got.
type result struct {
	name string
	m    *Member
	err  error
}

// waitFor starts a call named name that waits in s's queue (every member
// must be full) and returns once the queue counts it. Call it inside a
// synctest bubble.
func waitFor(t *testing.T, s *Snapshot, name string, req *strategy.Request, exclude []*Member, cancel <-chan struct{}, out chan<- result) {
	t.Helper()
	waitForClient(t, s, name, req, exclude, Client{Done: cancel}, out)
}

// waitForClient is waitFor with the client's signals.
func waitForClient(t *testing.T, s *Snapshot, name string, req *strategy.Request, exclude []*Member, client Client, out chan<- result) {
	t.Helper()
	before := s.Queue.Stats().Waiting
	go func() {
		m, err := s.AcquireWait(req, exclude, 0, client)
		out <- result{name, m, err}
	}()
	synctest.Wait() // the call has run until it blocks: in the queue, or on out
	if waiting := s.Queue.Stats().Waiting; waiting != before+1 {
		t.Fatalf("call %s did not queue (waiting %d)", name, waiting)
	}
}

func long(order string) protocol.Queue {
	return protocol.Queue{Limit: 10, Timeout: protocol.Duration(time.Hour), Order: order}
}

func TestQueueServesInArrivalOrder(t *testing.T) { synctest.Test(t, queueServesInArrivalOrder) }

func queueServesInArrivalOrder(t *testing.T) {
	s, _ := queued(t, 1, 1, long(protocol.QueueFIFO))
	held, err := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan result, 3)
	for _, name := range []string{"first", "second", "third"} {
		waitFor(t, s, name, &strategy.Request{Cost: 1}, nil, nil, out)
	}
	for _, want := range []string{"first", "second", "third"} {
		held.Release()
		r := <-out
		if r.err != nil || r.name != want || r.m != s.Eligible[0] {
			t.Fatalf("got %s (%v, %v), want %s on member a", r.name, r.m, r.err, want)
		}
		held = r.m
		if got := inflight(s)[0]; got != 1 {
			t.Fatalf("in flight %d after the hand-off, want 1 (the slot passed on)", got)
		}
	}
	held.Release()
	if got := inflight(s)[0]; got != 0 {
		t.Fatalf("in flight %d at the end, want 0", got)
	}
	if st := s.Queue.Stats(); st.Served != 3 || st.Waiting != 0 {
		t.Fatalf("stats %+v, want 3 served, none waiting", st)
	}
}

func TestQueueServesLeastCostFirst(t *testing.T) { synctest.Test(t, queueServesLeastCostFirst) }

func queueServesLeastCostFirst(t *testing.T) {
	s, _ := queued(t, 1, 1, long(protocol.QueueCost))
	held, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	out := make(chan result, 4)
	waitFor(t, s, "cost 5", &strategy.Request{Cost: 5}, nil, nil, out)
	waitFor(t, s, "cost 1", &strategy.Request{Cost: 1}, nil, nil, out)
	waitFor(t, s, "cost 3", &strategy.Request{Cost: 3}, nil, nil, out)
	waitFor(t, s, "cost 1 later", &strategy.Request{Cost: 1}, nil, nil, out)
	for _, want := range []string{"cost 1", "cost 1 later", "cost 3", "cost 5"} {
		held.Release()
		r := <-out
		if r.err != nil || r.name != want {
			t.Fatalf("got %s (%v), want %s", r.name, r.err, want)
		}
		held = r.m
	}
	held.Release()
}

// A call that has waited half the timeout goes before cheaper, younger ones.
func TestQueueCostOrderDoesNotStarveACostlyCall(t *testing.T) {
	synctest.Test(t, queueCostOrderDoesNotStarveACostlyCall)
}

func queueCostOrderDoesNotStarveACostlyCall(t *testing.T) {
	cfg := long(protocol.QueueCost)
	s, clock := queued(t, 1, 1, cfg)
	held, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	out := make(chan result, 3)
	waitFor(t, s, "costly", &strategy.Request{Cost: 100}, nil, nil, out)
	clock.Advance(cfg.Timeout.D()/2 - time.Millisecond)
	waitFor(t, s, "cheap", &strategy.Request{Cost: 1}, nil, nil, out)
	held.Release()
	if r := <-out; r.name != "cheap" {
		t.Fatalf("before half the timeout got %s, want cheap", r.name)
	} else {
		held = r.m
	}
	waitFor(t, s, "cheap again", &strategy.Request{Cost: 1}, nil, nil, out)
	clock.Advance(time.Millisecond)
	held.Release()
	if r := <-out; r.name != "costly" {
		t.Fatalf("at half the timeout got %s, want costly", r.name)
	} else {
		held = r.m
	}
	held.Release()
	<-out
}

func TestQueueFullIsOverloaded(t *testing.T) { synctest.Test(t, queueFullIsOverloaded) }

func queueFullIsOverloaded(t *testing.T) {
	cfg := long(protocol.QueueFIFO)
	cfg.Limit = 1
	s, _ := queued(t, 2, 1, cfg)
	a, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	b, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	out := make(chan result, 1)
	waitFor(t, s, "waiting", &strategy.Request{}, nil, nil, out)
	_, err := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	var qe *QueueError
	if !errors.As(err, &qe) || !qe.Full || qe.Limit != 1 || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("err %v, want a full-queue QueueError that is ErrOverloaded", err)
	}
	if st := s.Queue.Stats(); st.Full != 1 {
		t.Fatalf("stats %+v, want 1 full", st)
	}
	b.Release()
	r := <-out
	if r.err != nil || r.m != b {
		t.Fatalf("the waiting call got %v, %v; want member b", r.m, r.err)
	}
	a.Release()
	r.m.Release()
}

func TestQueueTimeoutAndCancel(t *testing.T) { synctest.Test(t, queueTimeoutAndCancel) }

func queueTimeoutAndCancel(t *testing.T) {
	cfg := protocol.Queue{Limit: 5, Timeout: protocol.Duration(20 * time.Millisecond), Order: protocol.QueueFIFO}
	s, _ := queued(t, 1, 1, cfg)
	held, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	start := time.Now()
	_, err := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	var qe *QueueError
	if !errors.As(err, &qe) || qe.Full || qe.Canceled || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("err %v, want a timed-out QueueError", err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("gave up after %v, before the 20ms timeout", waited)
	}

	s.Queue.Configure(long(protocol.QueueFIFO))
	cancel := make(chan struct{})
	out := make(chan result, 1)
	waitFor(t, s, "canceled", &strategy.Request{}, nil, cancel, out)
	close(cancel)
	r := <-out
	if !errors.As(r.err, &qe) || !qe.Canceled {
		t.Fatalf("err %v, want a canceled QueueError", r.err)
	}
	if st := s.Queue.Stats(); st.TimedOut != 2 || st.Waiting != 0 {
		t.Fatalf("stats %+v, want 2 timed out, none waiting", st)
	}
	held.Release()
	if got := inflight(s)[0]; got != 0 {
		t.Fatalf("in flight %d, want 0: a call that stopped waiting holds no slot", got)
	}
}

func TestQueueDisabledAnswersTheWaitingCalls(t *testing.T) {
	synctest.Test(t, queueDisabledAnswersTheWaitingCalls)
}

func queueDisabledAnswersTheWaitingCalls(t *testing.T) {
	s, _ := queued(t, 1, 1, long(protocol.QueueFIFO))
	held, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	out := make(chan result, 2)
	waitFor(t, s, "one", &strategy.Request{}, nil, nil, out)
	waitFor(t, s, "two", &strategy.Request{}, nil, nil, out)
	s.Queue.Configure(protocol.Queue{})
	for range 2 {
		if r := <-out; !errors.Is(r.err, ErrOverloaded) || r.m != nil {
			t.Fatalf("call %s got %v, %v; want ErrOverloaded", r.name, r.m, r.err)
		}
	}
	held.Release()
	if got := inflight(s)[0]; got != 0 {
		t.Fatalf("in flight %d, want 0", got)
	}
}

// A waiting call that avoids the freed member (it failed there) lets a
// later call take the room.
func TestQueueExcludedMemberGoesToAnotherCall(t *testing.T) {
	synctest.Test(t, queueExcludedMemberGoesToAnotherCall)
}

func queueExcludedMemberGoesToAnotherCall(t *testing.T) {
	s, _ := queued(t, 2, 1, long(protocol.QueueFIFO))
	a, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	b, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	out := make(chan result, 2)
	waitFor(t, s, "avoids a", &strategy.Request{}, []*Member{a}, nil, out)
	waitFor(t, s, "any", &strategy.Request{}, nil, nil, out)
	a.Release()
	if r := <-out; r.name != "any" || r.m != a {
		t.Fatalf("got %s on %v, want any on member a", r.name, r.m)
	}
	b.Release()
	if r := <-out; r.name != "avoids a" || r.m != b {
		t.Fatalf("got %s on %v, want avoids a on member b", r.name, r.m)
	}
}

// Many callers through a queue: no member ever goes over its limit, and
// every call gets a member.
func TestQueueUnderContention(t *testing.T) {
	const members, limit, callers, calls = 3, 2, 16, 300
	s, _ := queued(t, members, limit, protocol.Queue{Limit: callers, Timeout: protocol.Duration(time.Minute), Order: protocol.QueueCost})
	var holding [members]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				m, err := s.AcquireWait(&strategy.Request{Cost: float64((c + i) % 7)}, nil, uint32(i), Client{})
				if err != nil {
					errs <- err
					return
				}
				// Live.Inflight may show a failed try's passing +1;
				// holding counts only the calls that got the member.
				h := &holding[m.Replica.Index]
				if n := h.Add(1); n > limit {
					errs <- errors.New("a member went over its in-flight limit")
				}
				h.Add(-1)
				m.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, n := range inflight(s) {
		if n != 0 {
			t.Fatalf("member %d has %d in flight after every call ended", i, n)
		}
	}
	if st := s.Queue.Stats(); st.Waiting != 0 || st.TimedOut != 0 || st.Full != 0 {
		t.Fatalf("stats %+v: want none waiting, timed out or refused", st)
	}
}

// A waiting call whose client reports itself gone (polled) stops waiting
// and takes no member.
func TestQueueClientGone(t *testing.T) { synctest.Test(t, queueClientGone) }

func queueClientGone(t *testing.T) {
	s, _ := queued(t, 1, 1, long(protocol.QueueFIFO))
	held, _ := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	var gone atomic.Bool
	out := make(chan result, 1)
	waitForClient(t, s, "gone", &strategy.Request{}, nil, Client{Gone: gone.Load}, out)
	gone.Store(true)
	r := <-out
	var qe *QueueError
	if !errors.As(r.err, &qe) || !qe.Canceled || r.m != nil {
		t.Fatalf("got %v, %v; want a canceled QueueError", r.m, r.err)
	}
	held.Release()
	if got := inflight(s)[0]; got != 0 {
		t.Fatalf("in flight %d, want 0", got)
	}
}

// The queue sums the served calls' waits on its clock and counts them by
// QueueWaitBounds; a call that finds room, or times out, is not counted.
func TestQueueWaitTime(t *testing.T) { synctest.Test(t, queueWaitTime) }

func queueWaitTime(t *testing.T) {
	s, clock := queued(t, 1, 1, long(protocol.QueueFIFO))
	held, err := s.AcquireWait(&strategy.Request{}, nil, 0, Client{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan result, 2)
	waitFor(t, s, "30ms", &strategy.Request{}, nil, nil, out)
	clock.Advance(30 * time.Millisecond)
	held.Release()
	r := <-out
	waitFor(t, s, "2min", &strategy.Request{}, nil, nil, out)
	clock.Advance(2 * time.Minute)
	r.m.Release()
	r = <-out
	st := s.Queue.Stats()
	waited := (30*time.Millisecond + 2*time.Minute).Seconds()
	if st.Served != 2 || st.WaitSeconds != waited {
		t.Errorf("served %d, wait_seconds %v; want 2 and %v", st.Served, st.WaitSeconds, waited)
	}
	want := make([]uint64, len(QueueWaitBounds)+1)
	want[6] = 1           // (20ms, 50ms]
	want[len(want)-1] = 1 // above a minute
	if len(st.WaitCounts) != len(want) {
		t.Fatalf("wait counts %v, want %v", st.WaitCounts, want)
	}
	for i := range want {
		if st.WaitCounts[i] != want[i] {
			t.Fatalf("wait counts %v, want %v", st.WaitCounts, want)
		}
	}
	if QueueWaitBounds[6] != 50*time.Millisecond || QueueWaitBounds[5] != 20*time.Millisecond {
		t.Fatalf("bounds %v: the test expects (20ms, 50ms] at 6", QueueWaitBounds)
	}
	r.m.Release()
	if st := s.Queue.Stats(); st.Served != 2 || st.WaitSeconds != waited {
		t.Errorf("after a release with nothing waiting: served %d, wait_seconds %v", st.Served, st.WaitSeconds)
	}
}
