package clocktest

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
)

// manualTicker ticks when its clock is moved past its next tick.
type manualTicker struct {
	c      *Manual
	ch     chan time.Time
	period time.Duration // guarded by c.mu
	next   time.Time     // guarded by c.mu; zero when stopped
}

// NewTicker returns a ticker that ticks each time Advance moves the clock
// to or past its next tick (once per Advance, however many periods it
// crossed, like a time.Ticker whose reader is slow). It implements
// clock.Clock with Now.
func (c *Manual) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clocktest: NewTicker needs a positive period")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{c: c, ch: make(chan time.Time, 1), period: d, next: c.t.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

func (t *manualTicker) C() <-chan time.Time { return t.ch }

func (t *manualTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clocktest: Reset needs a positive period")
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.period, t.next = d, t.c.t.Add(d)
	t.drain()
}

func (t *manualTicker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.next = time.Time{}
	t.drain()
	for i, o := range t.c.tickers {
		if o == t {
			t.c.tickers = append(t.c.tickers[:i], t.c.tickers[i+1:]...)
			break
		}
	}
}

// drain drops a tick not yet received. Caller holds t.c.mu.
func (t *manualTicker) drain() {
	select {
	case <-t.ch:
	default:
	}
}

// fire ticks if now has reached the next tick. Caller holds t.c.mu.
func (t *manualTicker) fire(now time.Time) {
	if t.next.IsZero() || now.Before(t.next) {
		return
	}
	for !now.Before(t.next) {
		t.next = t.next.Add(t.period)
	}
	select {
	case t.ch <- now:
	default:
	}
}

var _ clock.Clock = (*Manual)(nil)
