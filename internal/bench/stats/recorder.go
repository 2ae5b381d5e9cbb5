package stats

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The range and precision of a Recorder: microsecond resolution from 1µs
// to 60s, three significant digits (a recorded value is off by at most
// 0.1%).
const (
	MinLatency        = time.Microsecond
	MaxLatency        = 60 * time.Second
	SignificantDigits = 3
)

// Recorder records call latencies: percentiles come from an HDR histogram
// (github.com/HdrHistogram/hdrhistogram-go), the count, mean, population
// standard deviation and maximum are kept exactly beside it. A latency
// below MinLatency is recorded as MinLatency, one above MaxLatency as
// MaxLatency and counted in Clamped.
//
// Not safe for concurrent use: give each goroutine its own Recorder and
// Merge them once the goroutines are done.
type Recorder struct {
	h *hdrhistogram.Histogram
	// Welford's running moments in µs, merged with Chan et al.'s formula.
	n        int64
	mean, m2 float64
	min, max float64
	clamped  int64
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{h: newHistogram()}
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(MinLatency.Microseconds(), MaxLatency.Microseconds(), SignificantDigits)
}

// Record adds one latency.
func (r *Recorder) Record(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	lo, hi := float64(MinLatency.Microseconds()), float64(MaxLatency.Microseconds())
	switch {
	case !(us >= lo): // also NaN-proof, though a Duration cannot be NaN
		us = lo
	case us > hi:
		us = hi
		r.clamped++
	}
	// In range by construction, so RecordValue cannot fail.
	_ = r.h.RecordValue(int64(math.Round(us)))
	r.n++
	delta := us - r.mean
	r.mean += delta / float64(r.n)
	r.m2 += delta * (us - r.mean)
	if r.n == 1 {
		r.min = us
	}
	r.min, r.max = min(r.min, us), max(r.max, us)
}

// Count is the number of latencies recorded.
func (r *Recorder) Count() int64 { return r.n }

// Clamped is the number of latencies above MaxLatency, recorded as
// MaxLatency.
func (r *Recorder) Clamped() int64 { return r.clamped }

// Merge adds everything other recorded into r; other is unchanged. Neither
// may be in use by another goroutine.
func (r *Recorder) Merge(other *Recorder) {
	if other == nil || other.n == 0 {
		return
	}
	r.h.Merge(other.h) // same range: nothing is dropped
	n := r.n + other.n
	delta := other.mean - r.mean
	r.mean += delta * float64(other.n) / float64(n)
	r.m2 += other.m2 + delta*delta*float64(r.n)*float64(other.n)/float64(n)
	if r.n == 0 {
		r.min = other.min
	}
	r.n = n
	r.min, r.max = min(r.min, other.min), max(r.max, other.max)
	r.clamped += other.clamped
}

// Merge returns a new recorder holding everything the given recorders
// recorded (nil ones are skipped); they are unchanged.
func Merge(rs ...*Recorder) *Recorder {
	out := NewRecorder()
	for _, r := range rs {
		out.Merge(r)
	}
	return out
}

// Summary is what a set of latencies comes to, in microseconds. The JSON
// names are the bench's result fields.
type Summary struct {
	// Count is the number of calls.
	Count int64 `json:"calls"`
	// Mean is exact; P5…P99 are within 0.1% (the histogram's precision)
	// and never above Max, which is exact.
	Mean float64 `json:"latency_mean_us"`
	P5   float64 `json:"latency_p5_us"`
	P50  float64 `json:"latency_p50_us"`
	P95  float64 `json:"latency_p95_us"`
	P99  float64 `json:"latency_p99_us"`
	Max  float64 `json:"latency_max_us"`
	// Jitter is the population standard deviation (exact).
	Jitter float64 `json:"jitter_us"`
}

// Summary summarises what r recorded; all zero when it recorded nothing.
func (r *Recorder) Summary() Summary {
	if r.n == 0 {
		return Summary{}
	}
	pct := r.Percentile
	return Summary{
		Count:  r.n,
		Mean:   r.mean,
		P5:     pct(5),
		P50:    pct(50),
		P95:    pct(95),
		P99:    pct(99),
		Max:    r.max,
		Jitter: math.Sqrt(r.m2 / float64(r.n)),
	}
}

// Percentile returns the latency at percentile p (0–100) in µs, within the
// histogram's precision and between the exact minimum and maximum; 0 when
// empty.
func (r *Recorder) Percentile(p float64) float64 {
	if r.n == 0 {
		return 0
	}
	// The histogram answers 0 for a percentile below its first value.
	return min(max(float64(r.h.ValueAtPercentile(p)), r.min), r.max)
}
