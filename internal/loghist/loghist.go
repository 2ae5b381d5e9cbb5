// Package loghist is the log-scale latency histogram that the front
// doors' call windows and the Go monitor share: four buckets per power of
// two of microseconds, so that a bucket's middle is within 12.5% of every
// latency in it, up to 2^36 µs (19 hours). Callers keep the counts (in
// atomics, rings, ...); this package maps latencies to buckets and counts
// to quantiles. Pure.
package loghist

import (
	"math/bits"
	"time"
)

// Buckets is the number of buckets.
const Buckets = 4 * 36

// Bucket is d's bucket: below 4 µs one per microsecond (a negative d is
// 0), above four per power of two, split by the two bits after the
// leading one; beyond the last bucket, the last.
func Bucket(d time.Duration) int {
	x := uint64(max(d, 0) / time.Microsecond)
	if x < 4 {
		return int(x)
	}
	e := bits.Len64(x) - 1 // >= 2
	sub := int(x>>(e-2)) & 3
	return min(4*(e-1)+sub, Buckets-1)
}

// Mid is the middle of bucket i's latencies.
func Mid(i int) time.Duration {
	if i < 4 {
		return time.Duration(i)*time.Microsecond + time.Microsecond/2
	}
	e, sub := i/4+1, uint64(i%4)
	lo, hi := (4+sub)<<(e-2), (5+sub)<<(e-2)
	return time.Duration(lo+hi) * time.Microsecond / 2
}

// Quantile is the q-quantile of the n latencies counted in counts: the
// middle of the bucket holding the ceil(q*n)-th smallest (at least the
// first).
func Quantile(counts *[Buckets]uint64, n uint64, q float64) time.Duration {
	rank := max(uint64(q*float64(n)+0.999999), 1)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return Mid(i)
		}
	}
	return Mid(Buckets - 1)
}
