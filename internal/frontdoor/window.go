package frontdoor

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// StatsWindow is how far back a CallWindow's figures reach: its rate and
// quantiles are of the calls of the last StatsWindow whole seconds.
const StatsWindow = 10 * time.Second

const (
	windowSeconds = int64(StatsWindow / time.Second)
	// windowSlots holds the current second besides the whole ones.
	windowSlots = windowSeconds + 1
	// latencyBuckets are log-scale with four buckets per power of two of
	// microseconds (bucketOf): within 12.5% of a latency, up to 2^36 µs.
	latencyBuckets = 4 * 36
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
	lat   [latencyBuckets]atomic.Uint32
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
		sl.lat[bucketOf(latency)].Add(1)
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
	var hist [latencyBuckets]uint64
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
		st.P50 = quantile(&hist, answered, 0.50)
		st.P99 = quantile(&hist, answered, 0.99)
	}
	return st
}

func slotOf(sec int64) int64 {
	return ((sec % windowSlots) + windowSlots) % windowSlots
}

// bucketOf is the histogram bucket of d: its microseconds x below 4 are
// buckets 0–3; above, 4 buckets per power of two, split by the two bits
// after the leading one.
func bucketOf(d time.Duration) int {
	x := uint64(max(d, 0) / time.Microsecond)
	if x < 4 {
		return int(x)
	}
	e := bits.Len64(x) - 1 // >= 2
	sub := int(x>>(e-2)) & 3
	return min(4*(e-1)+sub, latencyBuckets-1)
}

// bucketMid is the middle of bucket i's latencies.
func bucketMid(i int) time.Duration {
	if i < 4 {
		return time.Duration(i)*time.Microsecond + time.Microsecond/2
	}
	e, sub := i/4+1, uint64(i%4)
	lo, hi := (4+sub)<<(e-2), (5+sub)<<(e-2)
	return time.Duration(lo+hi) * time.Microsecond / 2
}

// quantile is the q-quantile of the n latencies in hist: the middle of
// the bucket holding the ceil(q*n)-th smallest.
func quantile(hist *[latencyBuckets]uint64, n uint64, q float64) time.Duration {
	rank := uint64(q*float64(n) + 0.999999)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range hist {
		seen += c
		if seen >= rank {
			return bucketMid(i)
		}
	}
	return bucketMid(latencyBuckets - 1)
}
