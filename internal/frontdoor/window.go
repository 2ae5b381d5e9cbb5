package frontdoor

import (
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/loghist"
)

// StatsWindow is how far back a CallWindow's figures reach: its rate and
// quantiles are of the calls of the last StatsWindow whole seconds.
const StatsWindow = 10 * time.Second

const (
	windowSeconds = int64(StatsWindow / time.Second)
	// windowSlots holds the current second besides the whole ones.
	windowSlots = windowSeconds + 1
)

// CallWindow counts the calls a front door sent to one member and their
// latencies over the last StatsWindow: a ring of per-second slots, each
// with a log-scale latency histogram. Record runs on the hot path: no
// locks, no allocations, a fixed size (about 6 KB). Safe for concurrent
// use; must not be copied. The figures are estimates: a call recorded
// while another goroutine starts a new second in the same slot may be
// lost, and a quantile is known to within 12.5%.
type CallWindow struct {
	// first is the Unix second of the first call recorded (0: none).
	first atomic.Int64
	slots [windowSlots]windowSlot
}

type windowSlot struct {
	sec   atomic.Int64 // the Unix second the slot counts
	calls atomic.Uint32
	lat   [loghist.Buckets]atomic.Uint32
}

// Record counts one call that finished at now after latency; answered
// says whether the member answered it (a failed attempt counts as a call,
// but its latency is not the member's).
func (w *CallWindow) Record(now time.Time, latency time.Duration, answered bool) {
	s := now.Unix()
	w.first.CompareAndSwap(0, s)
	sl := &w.slots[slotOf(s)]
	if old := sl.sec.Load(); old != s && sl.sec.CompareAndSwap(old, s) {
		sl.calls.Store(0)
		for i := range sl.lat {
			sl.lat[i].Store(0)
		}
	}
	sl.calls.Add(1)
	if answered {
		sl.lat[loghist.Bucket(latency)].Add(1)
	}
}

// WindowStats are a CallWindow's figures at one instant.
type WindowStats struct {
	// RPS is the calls per second over the whole seconds of the window
	// (fewer than StatsWindow since the first call); RPSKnown is false
	// before the first whole second after the first call.
	RPS      float64
	RPSKnown bool
	// P50 and P99 are latency quantiles of the answered calls in the
	// window; Answered counts them (0: the quantiles are unknown).
	P50, P99 time.Duration
	Answered uint64
}

// Stats returns the window's figures at now: the calls of the whole
// seconds before now's, at most StatsWindow of them. Pure but for the
// counters it reads.
func (w *CallWindow) Stats(now time.Time) WindowStats {
	s := now.Unix()
	first := w.first.Load()
	if first == 0 {
		return WindowStats{RPSKnown: true} // no call yet: none per second
	}
	span := min(windowSeconds, s-first)
	if span <= 0 {
		return WindowStats{}
	}
	var hist [loghist.Buckets]uint64
	var calls, answered uint64
	for sec := s - span; sec < s; sec++ {
		sl := &w.slots[slotOf(sec)]
		if sl.sec.Load() != sec {
			continue // no call in that second
		}
		calls += uint64(sl.calls.Load())
		for i := range sl.lat {
			n := uint64(sl.lat[i].Load())
			hist[i] += n
			answered += n
		}
	}
	st := WindowStats{RPS: float64(calls) / float64(span), RPSKnown: true, Answered: answered}
	if answered > 0 {
		st.P50 = loghist.Quantile(&hist, answered, 0.50)
		st.P99 = loghist.Quantile(&hist, answered, 0.99)
	}
	return st
}

func slotOf(sec int64) int64 {
	return ((sec % windowSlots) + windowSlots) % windowSlots
}
