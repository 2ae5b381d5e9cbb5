package overhead

import (
	"math"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// TestRoundP99RatiosArePerRound: the per-request p99 is compared with
// HAProxy's round by round, so one slow round (the machine's, not the
// configuration's) moves one ratio, not the verdict.
func TestRoundP99RatiosArePerRound(t *testing.T) {
	t.Parallel()
	hp := overheadConf(bench.ConfigHAProxy, rounds5(100, 100, 100, 100, 100)...)
	pr := overheadConf(bench.ConfigPerRequest, rounds5(90, 90, 2000, 90, 95)...)
	got := roundP99Ratios(pr, hp)
	want := []float64{0.9, 0.9, 20, 0.9, 0.95}
	if len(got) != len(want) {
		t.Fatalf("ratios %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 0.01 {
			t.Fatalf("ratios %v, want %v", got, want)
		}
	}
}
