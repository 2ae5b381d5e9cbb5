// Package clock is the time seam of fulcrum's concurrent layers: the
// balancer's step loop, report pullers and probe loops and the health
// prober read the time and tick through a Clock given to them, never
// through package time directly, so that a test can run them on a clock of
// its own (clocktest.Manual) or inside a testing/synctest bubble.
//
//	c := clock.Real()
//	t := c.NewTicker(time.Second)
//	defer t.Stop()
//	for range t.C() { step(c.Now()) }
package clock

import "time"

// Clock reads the time and makes tickers. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTicker returns a ticker that ticks every d (> 0), like
	// time.NewTicker: a slow reader misses ticks rather than queueing
	// them.
	NewTicker(d time.Duration) Ticker
}

// Ticker is a running ticker.
type Ticker interface {
	// C delivers the ticks.
	C() <-chan time.Time
	// Reset stops the ticker and restarts it with period d (> 0): the
	// next tick comes d after the call, and no tick due before the call
	// is received after it (time.Ticker.Reset since Go 1.23).
	Reset(d time.Duration)
	// Stop stops the ticker; no tick is delivered after it returns.
	Stop()
}

// Real is the system clock: time.Now and time.NewTicker.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTicker) Stop()                 { r.t.Stop() }

// Or returns c, or Real() when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
