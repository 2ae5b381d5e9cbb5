package monitor

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histBuckets are the buckets of a latencyHistogram: log-scale, four per
// power of two of microseconds (histBucket), up to 2^36 µs (19 hours).
const histBuckets = 4 * 36

// latencyHistogram counts finished calls by latency, cumulatively: a
// report window's quantiles are those of the counts added since the
// window began (windowQuantiles). Fixed size (about 1 KB), no locks, no
// allocations. Safe for concurrent use; must not be copied.
type latencyHistogram struct {
	b [histBuckets]atomic.Uint64
}

func (h *latencyHistogram) add(d time.Duration) { h.b[histBucket(d)].Add(1) }

// load copies the counts into out.
func (h *latencyHistogram) load(out *[histBuckets]uint64) {
	for i := range h.b {
		out[i] = h.b[i].Load()
	}
}

// windowQuantiles are the median and 99th percentile latency (ms) of the
// calls counted in cur but not in prev (cumulative counts at the window's
// end and start); ok is false when the window has none. Each is the
// middle of its bucket: within 12.5% of the latency. Pure.
func windowQuantiles(cur, prev *[histBuckets]uint64) (p50, p99 float64, ok bool) {
	var n uint64
	for i := range cur {
		n += cur[i] - prev[i]
	}
	if n == 0 {
		return 0, 0, false
	}
	at := func(q float64) float64 {
		rank := max(uint64(q*float64(n)+0.999999), 1)
		var seen uint64
		for i := range cur {
			seen += cur[i] - prev[i]
			if seen >= rank {
				return float64(histMid(i)) / float64(time.Millisecond)
			}
		}
		return float64(histMid(histBuckets-1)) / float64(time.Millisecond)
	}
	return at(0.50), at(0.99), true
}

// histBucket is d's bucket: below 4µs one per microsecond, above four
// per power of two, split by the two bits after the leading one.
func histBucket(d time.Duration) int {
	x := uint64(max(d, 0) / time.Microsecond)
	if x < 4 {
		return int(x)
	}
	e := bits.Len64(x) - 1 // >= 2
	return min(4*(e-1)+int(x>>(e-2))&3, histBuckets-1)
}

// histMid is the middle of bucket i's latencies.
func histMid(i int) time.Duration {
	if i < 4 {
		return time.Duration(i)*time.Microsecond + time.Microsecond/2
	}
	e, sub := i/4+1, uint64(i%4)
	lo, hi := (4+sub)<<(e-2), (5+sub)<<(e-2)
	return time.Duration(lo+hi) * time.Microsecond / 2
}
