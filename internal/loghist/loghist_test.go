package loghist

import (
	"testing"
	"time"
)

// within tells whether got is within 12.5% of want.
func within(got, want time.Duration) bool {
	return float64(got) >= float64(want)*0.875 && float64(got) <= float64(want)*1.125
}

func TestBucketsCoverEveryDuration(t *testing.T) {
	t.Parallel()
	prev := -1
	for _, d := range []time.Duration{-time.Second, 0, time.Microsecond, 3 * time.Microsecond, 4 * time.Microsecond, 7 * time.Microsecond,
		9 * time.Microsecond, time.Millisecond, 37 * time.Millisecond, time.Second, time.Minute, time.Hour, 1000 * time.Hour} {
		b := Bucket(d)
		if b < 0 || b >= Buckets || b < prev {
			t.Fatalf("Bucket(%v) = %d after %d: want monotone in [0, %d)", d, b, prev, Buckets)
		}
		prev = b
		if d >= 8*time.Microsecond && d < time.Hour && !within(Mid(b), d) {
			t.Errorf("Mid(Bucket(%v)) = %v, want within 12.5%%", d, Mid(b))
		}
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	var counts [Buckets]uint64
	for i := range 100 {
		d := 4 * time.Millisecond
		if i >= 98 {
			d = 250 * time.Millisecond
		}
		counts[Bucket(d)]++
	}
	if p50 := Quantile(&counts, 100, 0.50); !within(p50, 4*time.Millisecond) {
		t.Errorf("p50 %v, want about 4ms", p50)
	}
	if p99 := Quantile(&counts, 100, 0.99); !within(p99, 250*time.Millisecond) {
		t.Errorf("p99 %v, want about 250ms", p99)
	}
	// p98 is the 98th smallest: still a fast call.
	if p98 := Quantile(&counts, 100, 0.98); !within(p98, 4*time.Millisecond) {
		t.Errorf("p98 %v, want about 4ms", p98)
	}
	if p0 := Quantile(&counts, 100, 0); !within(p0, 4*time.Millisecond) {
		t.Errorf("p0 %v, want the smallest, about 4ms", p0)
	}
}
