// Package clocktest is a clock for the tests of code that takes an
// injected clock (strategies, queues, agents): its time moves only when
// the test moves it.
package clocktest

import (
	"sync"
	"time"
)

// Manual is a clock moved by hand, and its tickers with it (NewTicker).
// Safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	t       time.Time
	tickers []*manualTicker
}

// New returns a clock reading t.
func New(t time.Time) *Manual { return &Manual{t: t} }

// Now is the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Manual) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	for _, t := range c.tickers {
		t.fire(c.t)
	}
	return c.t
}
