package monitor

import (
	"testing"
	"time"
)

func TestLatencyEstimateByCallsInFlight(t *testing.T) {
	t.Parallel()
	var r latencyRing
	if got := r.estimate(1); got != 0 {
		t.Errorf("empty: %v, want 0", got)
	}
	// Alone, calls take 2ms; with 5 to 7 in flight (bucket 3: 4..7), 30ms.
	for range 10 {
		r.add(2*time.Millisecond, 1)
	}
	for i := range 4 {
		r.add(30*time.Millisecond, int64(5+i%3))
	}
	tests := []struct {
		rif  int64
		want float64
	}{
		{1, 2},  // bucket 1: ten samples
		{6, 30}, // bucket 3: four samples, enough
		{4, 30}, // the same bucket
		{2, 2},  // bucket 2: none, the median of all fourteen
		{100, 2},
	}
	for _, tt := range tests {
		if got := r.estimate(tt.rif); got != tt.want {
			t.Errorf("estimate(%d) = %v, want %v", tt.rif, got, tt.want)
		}
	}
	// The ring keeps the latest 64: old samples fall out.
	for range latencySamples {
		r.add(7*time.Millisecond, 1)
	}
	if got := r.estimate(6); got != 7 {
		t.Errorf("after 64 newer calls: %v, want 7", got)
	}
}
