package monitor

import (
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/loghist"
)

// latencyHistogram counts finished calls by latency, cumulatively: a
// report window's quantiles are those of the counts added since the
// window began (windowQuantiles). Fixed size (about 1 KB), no locks, no
// allocations. Safe for concurrent use; must not be copied.
type latencyHistogram struct {
	b [loghist.Buckets]atomic.Uint64
}

func (h *latencyHistogram) add(d time.Duration) { h.b[loghist.Bucket(d)].Add(1) }

// load copies the counts into out.
func (h *latencyHistogram) load(out *[loghist.Buckets]uint64) {
	for i := range h.b {
		out[i] = h.b[i].Load()
	}
}

// windowQuantiles are the median and 99th percentile latency (ms) of the
// calls counted in cur but not in prev (cumulative counts at the window's
// end and start); ok is false when the window has none. Each is the
// middle of its bucket: within 12.5% of the latency. Pure.
func windowQuantiles(cur, prev *[loghist.Buckets]uint64) (p50, p99 float64, ok bool) {
	var window [loghist.Buckets]uint64
	var n uint64
	for i := range cur {
		window[i] = cur[i] - prev[i]
		n += window[i]
	}
	if n == 0 {
		return 0, 0, false
	}
	ms := func(q float64) float64 { return float64(loghist.Quantile(&window, n, q)) / float64(time.Millisecond) }
	return ms(0.50), ms(0.99), true
}
