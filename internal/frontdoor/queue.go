package frontdoor

import (
	"container/heap"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Queue holds a group's proxied calls while every eligible member has
// MaxInflight calls in flight, and hands each to a member as soon as one
// has room, in the order its protocol.Queue says: the calls that would
// otherwise be answered 503 at once wait up to the queue's timeout. It
// outlives snapshots: the group creates one and every snapshot and member
// it publishes points to it.
//
// A slot freed by Member.Release goes to the queue's first waiting call
// (Kick), picked among the members with room by the group's strategy, so
// that no call waits while a member has room and a call arriving while
// others wait finds every slot taken and queues behind them. The order is
// decided under the queue's lock with the injected clock; the wait itself
// is a timer.
type Queue struct {
	snapshot func() *Snapshot
	now      func() time.Time
	waiting  atomic.Int64 // len of the queue, read without the lock
	lead     atomic.Int64 // cfg.Lead in ns, read by the members' Pace

	mu     sync.Mutex
	cfg    protocol.Queue
	seq    uint64
	spill  uint32
	byCost costHeap
	head   *waiter // oldest; fifo through next
	tail   *waiter

	// changed, when not nil, is closed at the next change of the calls
	// waiting or of the timed-out count (Changed).
	changed chan struct{}

	served, full, timedOut, early atomic.Uint64
	// waitNS sums the served calls' waits; waitCounts counts them by
	// QueueWaitBounds (the last: above every bound).
	waitNS     atomic.Int64
	waitCounts [len(QueueWaitBounds) + 1]atomic.Uint64
}

// QueueWaitBounds are the upper bounds of the queue's wait histogram
// (protocol.QueueStats.WaitCounts): from half a millisecond, a fraction of one
// proxied call, to the longest queue.timeout worth waiting out.
var QueueWaitBounds = [...]time.Duration{
	500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
	5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

// waiter is one call waiting in a Queue. Its fields but ch belong to the
// queue's lock.
type waiter struct {
	req     *strategy.Request
	exclude []*Member
	cost    float64
	seq     uint64
	since   time.Time
	queued  bool
	heapIdx int
	prev    *waiter
	next    *waiter
	ch      chan waitResult // buffered: the queue never blocks on it
}

type waitResult struct {
	m   *Member
	err error
}

// QueueError is why a call could not wait for a member, or stopped
// waiting; it unwraps to ErrOverloaded.
type QueueError struct {
	// Full is true when the queue already held Limit calls.
	Full  bool
	Limit int
	// Waited is how long the call waited before its timeout (or before
	// its client went away, Canceled).
	Waited   time.Duration
	Canceled bool
}

func (e *QueueError) Error() string {
	switch {
	case e.Full:
		return fmt.Sprintf("every replica is at max_inflight and the queue holds its limit of %d calls", e.Limit)
	case e.Canceled:
		return fmt.Sprintf("the client went away after %v in the queue", e.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("every replica stayed at max_inflight while the call waited %v in the queue (queue.timeout)", e.Waited.Round(time.Millisecond))
}

func (e *QueueError) Unwrap() error { return ErrOverloaded }

// NewQueue returns a queue for a group whose current snapshot snapshot
// returns (never nil). now is the clock of its ordering (time.Now if nil).
func NewQueue(snapshot func() *Snapshot, now func() time.Time) *Queue {
	if now == nil {
		now = time.Now
	}
	return &Queue{snapshot: snapshot, now: now}
}

// Configure sets the queue's limit, timeout and order (after
// registry.WithDefaults). A disabled queue answers its waiting
// calls ErrOverloaded; a lower limit keeps the calls already waiting.
func (q *Queue) Configure(cfg protocol.Queue) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cfg = cfg
	if cfg.Enabled() {
		q.lead.Store(int64(cfg.Lead.D()))
		return
	}
	q.lead.Store(0)
	for q.head != nil {
		w := q.head
		q.removeLocked(w)
		w.ch <- waitResult{err: ErrOverloaded}
	}
}

// Stats returns the queue's gauge and counters.
func (q *Queue) Stats() protocol.QueueStats {
	st := protocol.QueueStats{
		Waiting:     int(q.waiting.Load()),
		Served:      q.served.Load(),
		Full:        q.full.Load(),
		TimedOut:    q.timedOut.Load(),
		Early:       q.early.Load(),
		WaitSeconds: time.Duration(q.waitNS.Load()).Seconds(),
		WaitCounts:  make([]uint64, len(q.waitCounts)),
	}
	for i := range q.waitCounts {
		st.WaitCounts[i] = q.waitCounts[i].Load()
	}
	return st
}

// observeWait counts a served call that waited d.
func (q *Queue) observeWait(d time.Duration) {
	d = max(d, 0)
	q.waitNS.Add(int64(d))
	i := 0
	for i < len(QueueWaitBounds) && d > QueueWaitBounds[i] {
		i++
	}
	q.waitCounts[i].Add(1)
}

// Client tells a call waiting in a queue that its client went away, so
// that it stops waiting (and no replica works for nobody): Done is closed
// (net/http's request context), or Gone, asked every ClientCheckInterval
// on the waiting goroutine, says so (a connection with no reader
// goroutine). Either may be nil.
type Client struct {
	Done <-chan struct{}
	Gone func() bool
}

// ClientCheckInterval is how often a waiting call asks Client.Gone.
const ClientCheckInterval = 100 * time.Millisecond

// AcquireWait is Acquire that, when every member is full and the snapshot
// has a queue, waits in it for a member with room until the queue's
// timeout or until the client goes away. The request and exclude must
// stay unchanged until it returns. Errors are Acquire's, or a *QueueError
// (which unwraps to ErrOverloaded).
func (s *Snapshot) AcquireWait(req *strategy.Request, exclude []*Member, spill uint32, client Client) (*Member, error) {
	m, err := s.Acquire(req, exclude, spill)
	if err != ErrOverloaded || s.Queue == nil {
		return m, err
	}
	return s.Queue.wait(req, exclude, client)
}

// wait queues the call and waits for Kick to hand it a member.
func (q *Queue) wait(req *strategy.Request, exclude []*Member, client Client) (*Member, error) {
	q.mu.Lock()
	cfg := q.cfg
	if !cfg.Enabled() {
		q.mu.Unlock()
		return nil, ErrOverloaded
	}
	if int(q.waiting.Load()) >= cfg.Limit {
		q.mu.Unlock()
		q.full.Add(1)
		return nil, &QueueError{Full: true, Limit: cfg.Limit}
	}
	q.seq++
	w := &waiter{req: req, exclude: exclude, cost: req.Cost, seq: q.seq, since: q.now(), ch: make(chan waitResult, 1)}
	q.pushLocked(w)
	q.mu.Unlock()
	// A slot may have been freed between Acquire and the push, by a
	// Release that saw no call waiting.
	q.Kick()

	timer := time.NewTimer(cfg.Timeout.D())
	defer timer.Stop()
	var check <-chan time.Time
	if client.Gone != nil {
		t := time.NewTicker(ClientCheckInterval)
		defer t.Stop()
		check = t.C
	}
	canceled := false
wait:
	for {
		select {
		case r := <-w.ch:
			return r.m, r.err
		case <-timer.C:
			break wait
		case <-client.Done:
			canceled = true
			break wait
		case <-check:
			if client.Gone() {
				canceled = true
				break wait
			}
		}
	}
	q.mu.Lock()
	if w.queued {
		q.removeLocked(w)
		q.timedOut.Add(1)
		q.notifyLocked()
		q.mu.Unlock()
		return nil, &QueueError{Waited: q.now().Sub(w.since), Canceled: canceled}
	}
	q.mu.Unlock()
	// Kick handed the call a member as the wait ended: keep it.
	r := <-w.ch
	return r.m, r.err
}

// Kick hands members with room to the waiting calls, first in the queue's
// order first, until no call waits or no member has room. Member.Release
// calls it; the group calls it when a new snapshot may have room (a
// member joined, max_inflight rose).
func (q *Queue) Kick() {
	if q.waiting.Load() == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	snap := q.snapshot()
	now := q.now()
	for q.head != nil {
		w := q.nextLocked(now)
		q.spill++
		m, err := snap.Acquire(w.req, w.exclude, q.spill)
		if errors.Is(err, ErrOverloaded) && len(w.exclude) > 0 {
			// The first call avoids the members with room (they failed
			// it before); the oldest call that avoids none takes the
			// room instead.
			if w = q.firstUnexcludedLocked(); w == nil {
				return
			}
			m, err = snap.Acquire(w.req, nil, q.spill)
		}
		if errors.Is(err, ErrOverloaded) {
			return
		}
		q.removeLocked(w)
		if err == nil {
			q.served.Add(1)
			q.observeWait(now.Sub(w.since))
		}
		w.ch <- waitResult{m: m, err: err}
	}
}

// nextLocked is the call the queue serves first: the oldest (fifo), or
// the one of least cost unless the oldest has waited half the timeout.
func (q *Queue) nextLocked(now time.Time) *waiter {
	if q.cfg.Order != protocol.QueueCost || now.Sub(q.head.since) >= q.cfg.Timeout.D()/2 {
		return q.head
	}
	return q.byCost[0]
}

func (q *Queue) firstUnexcludedLocked() *waiter {
	for w := q.head; w != nil; w = w.next {
		if len(w.exclude) == 0 {
			return w
		}
	}
	return nil
}

func (q *Queue) pushLocked(w *waiter) {
	w.queued = true
	heap.Push(&q.byCost, w)
	w.prev = q.tail
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.waiting.Add(1)
	q.notifyLocked()
}

func (q *Queue) removeLocked(w *waiter) {
	w.queued = false
	heap.Remove(&q.byCost, w.heapIdx)
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.waiting.Add(-1)
	q.notifyLocked()
}

// Changed returns a channel closed at the next change of the calls
// waiting (Stats().Waiting) or of the calls that left the queue without a
// member (Stats().TimedOut): a waiter for a state of the queue reads
// Stats after taking the channel and waits on it while the state is not
// there yet, without polling.
func (q *Queue) Changed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	return q.changed
}

// notifyLocked wakes Changed's waiters. Caller must hold q.mu.
func (q *Queue) notifyLocked() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

// costHeap orders waiters by cost, then by arrival.
type costHeap []*waiter

func (h costHeap) Len() int { return len(h) }
func (h costHeap) Less(i, j int) bool {
	if h[i].cost != h[j].cost {
		return h[i].cost < h[j].cost
	}
	return h[i].seq < h[j].seq
}
func (h costHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *costHeap) Push(x any) {
	w := x.(*waiter)
	w.heapIdx = len(*h)
	*h = append(*h, w)
}
func (h *costHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
