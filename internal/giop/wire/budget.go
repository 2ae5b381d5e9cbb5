package wire

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrCancelled is returned by Budget.Acquire when its cancel channel
// closes first: the connection waiting for memory is going away.
var ErrCancelled = fmt.Errorf("wire: waiting for buffer memory: %w", os.ErrClosed)

// Budget bounds the bytes that half-read messages hold together, across
// every connection that shares it (a front door's): a reader takes bytes
// before it grows a message's buffer and gives them back when the message
// is whole (or dropped). At the bound, Acquire waits, so that the reader
// stops reading from its connection until others give memory back:
// back-pressure, not an error. So that readers never all wait on each
// other with every message half-read, one reader at a time may go past the
// bound (the overdraft, see Acquire): what is held stays within the bound
// plus one message. Safe for concurrent use.
type Budget struct {
	mu   sync.Mutex
	max  int
	held int
	// overdraft is the reader that may go past the bound until Done.
	overdraft any
	peak      int           // the most held at once
	waiting   int           // Acquire calls waiting
	changed   chan struct{} // closed and replaced whenever the state changes
}

// NewBudget returns a Budget of max bytes.
func NewBudget(max int) *Budget { return &Budget{max: max, changed: make(chan struct{})} }

// SetMax changes the bound; waiters are woken to look again.
func (b *Budget) SetMax(max int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max != max {
		b.max = max
		b.notifyLocked()
	}
}

// Max is the bound.
func (b *Budget) Max() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.max
}

// BudgetStats is a Budget's state.
type BudgetStats struct {
	// Held is the bytes taken and not given back; Peak the most held at
	// once so far.
	Held, Peak int
	// Waiting is the number of Acquire calls waiting for memory.
	Waiting int
}

// Stats returns the Budget's state, with a channel closed at its next
// change: a test or a gauge can wait on it instead of polling.
func (b *Budget) Stats() (BudgetStats, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Held: b.held, Peak: b.peak, Waiting: b.waiting}, b.changed
}

// Acquire takes n bytes for owner (a comparable value naming the reader of
// one message), waiting while they would take what is held above the
// bound. When nothing is held, or no reader has the overdraft (owner then
// takes it) or owner has it, n is granted whatever its size: a message
// larger than the bound still progresses, and so does one message at a
// time while every reader waits. Done ends owner's overdraft. Acquire
// gives up with an error wrapping os.ErrDeadlineExceeded at deadline
// (zero: none), or ErrCancelled when cancel closes (nil: never); nothing is
// taken then.
func (b *Budget) Acquire(owner any, n int, deadline time.Time, cancel <-chan struct{}) error {
	if n <= 0 {
		return nil
	}
	var expired <-chan time.Time
	waiting := false
	defer func() {
		if waiting {
			b.mu.Lock()
			b.waiting--
			b.notifyLocked()
			b.mu.Unlock()
		}
	}()
	for {
		b.mu.Lock()
		if b.held != 0 && b.held+n > b.max && b.overdraft == nil {
			b.overdraft = owner
		}
		if b.held == 0 || b.held+n <= b.max || b.overdraft == owner {
			b.held += n
			b.peak = max(b.peak, b.held)
			b.notifyLocked()
			b.mu.Unlock()
			return nil
		}
		if !waiting {
			waiting = true
			b.waiting++
			b.notifyLocked()
		}
		changed := b.changed
		b.mu.Unlock()
		if expired == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-changed:
		case <-expired:
			return fmt.Errorf("wire: waiting for %d bytes of buffer memory: %w", n, os.ErrDeadlineExceeded)
		case <-cancel:
			return ErrCancelled
		}
	}
}

// Done ends owner's overdraft, if it has it: its message is whole or
// dropped.
func (b *Budget) Done(owner any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.overdraft == owner {
		b.overdraft = nil
		b.notifyLocked()
	}
}

// Take takes n bytes at once, past the bound if need be: for bytes that
// are already read (fragments kept for the rest of their message). The
// next Acquire calls wait until they are given back.
func (b *Budget) Take(n int) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held += n
	b.peak = max(b.peak, b.held)
	b.notifyLocked()
}

// Release gives back n bytes taken with Acquire or Take.
func (b *Budget) Release(n int) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = max(b.held-n, 0)
	b.notifyLocked()
}

func (b *Budget) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// acquire is Acquire on a Budget that may be nil (no bound).
func (b *Budget) acquire(owner any, n int, deadline time.Time, cancel <-chan struct{}) error {
	if b == nil {
		return nil
	}
	return b.Acquire(owner, n, deadline, cancel)
}

// done is Done on a Budget that may be nil.
func (b *Budget) done(owner any) {
	if b != nil {
		b.Done(owner)
	}
}

// take is Take on a Budget that may be nil.
func (b *Budget) take(n int) {
	if b != nil {
		b.Take(n)
	}
}

// release is Release on a Budget that may be nil.
func (b *Budget) release(n int) {
	if b != nil {
		b.Release(n)
	}
}
