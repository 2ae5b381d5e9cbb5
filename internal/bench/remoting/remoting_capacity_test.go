package remoting

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestRemotingPlanAgainstTheCapacity: with the estimate from quotaPerX,
// remotingPlan offers the share u of the X the saturated group answered
// per second, whatever the group's quota.
func TestRemotingPlanAgainstTheCapacity(t *testing.T) {
	t.Parallel()
	for _, quota := range []float64{1, 0.5} {
		x := &Remoting{CPU: quota}
		c := remotingCapacity{Calls: 900, XSum: 270_000_000, Elapsed: time.Second} // 2.7e8 X/s
		if got := c.rps(); got != 900 {
			t.Errorf("rps %v, want 900", got)
		}
		clients, gap := remotingPlan(7, 8, 200, 300_000, 0.9, quota, x.quotaPerX(c))
		if gap <= 0 {
			t.Fatalf("quota %v: no gap", quota)
		}
		span := time.Duration(200) * gap
		offered := float64(sumX(clients)) / span.Seconds()
		if want := 0.9 * c.xPerSec(); math.Abs(offered/want-1) > 1e-6 {
			t.Errorf("quota %v: offered %.4g X/s, want %.4g (90%% of the capacity)", quota, offered, want)
		}
	}
	if got := (&Remoting{CPU: 1}).quotaPerX(remotingCapacity{}); got != 0 {
		t.Errorf("quotaPerX of no measurement = %v, want 0 (no gap)", got)
	}
}

// TestCapacityUtilization: each round's offer counts against the mean of
// the capacities measured on either side of it.
func TestCapacityUtilization(t *testing.T) {
	t.Parallel()
	capOf := func(xps float64) remotingCapacity {
		return remotingCapacity{Calls: 1, XSum: int64(xps), Elapsed: time.Second}
	}
	caps := []remotingCapacity{capOf(1000), capOf(1200), capOf(1000)}
	windows := []time.Duration{2 * time.Second, 2 * time.Second}
	// Round 1 against 1100 X/s, round 2 against 1100 X/s: 1980 X each is 90%.
	if got := capacityUtilization([]float64{1980, 1980}, windows, caps); math.Abs(got-0.9) > 1e-12 {
		t.Errorf("utilisation %v, want 0.9", got)
	}
	if got := capacityUtilization([]float64{1980, 1980}, windows, caps[:2]); !math.IsNaN(got) {
		t.Errorf("without a measurement after the last round: %v, want NaN", got)
	}
	if got := capacityUtilization(nil, nil, caps[:1]); !math.IsNaN(got) {
		t.Errorf("no rounds: %v, want NaN", got)
	}
}

func TestRemotingCapacityFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target, load, cpu float64
		want              string // prefix; "" counts
	}{
		{0.9, 0.9, 0.97, ""}, // a Go replica's CPU runs above the load
		{0.9, 0.86, 0.9, ""},
		{0.9, 0.84, 0.9, "capacity moved"},
		{0.9, 0.96, 0.99, "capacity moved"},
		{0.9, 0.9, 1.02, "overloaded"},
		{0.9, math.NaN(), 0.9, "load not measured"},
		{0.9, 0.9, 0, "load not measured"},
	} {
		got := remotingCapacityFlag(tc.target, tc.load, tc.cpu)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("remotingCapacityFlag(%v, %v, %v) = %q, want %q…", tc.target, tc.load, tc.cpu, got, tc.want)
		}
	}
}

// TestUnequalReplicas: a replica that answered far less than the median
// one while saturated is named; the usual spread is not.
func TestUnequalReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		xs   []int64
		want string // "" or a part of the flag
	}{
		{[]int64{100, 97, 103, 99}, ""},
		{[]int64{100, 52, 103, 99}, "replica 2 at 52%"},
		{[]int64{100, 55}, "replica 2 at 71%"},
		{[]int64{100, 85}, ""},
		{[]int64{0, 0}, ""},
		{[]int64{100}, ""},
	} {
		got := unequalReplicas(remotingCapacity{ReplicaXSum: tc.xs})
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("unequalReplicas(%v) = %q, want %q", tc.xs, got, tc.want)
		}
	}
	if got := joinFlags("", "a", "", "b"); got != "a; b" {
		t.Errorf("joinFlags = %q, want \"a; b\"", got)
	}
}

// TestServiceSCV: a call's work a + b·X with X exponential varies with
// c² = (b·E[X] / (a + b·E[X]))²: 1 without a fixed part, 0.25 when half
// of the mean is fixed.
func TestServiceSCV(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fixed, mean, want float64 }{
		{0, 1.2, 1},
		{0.6, 1.2, 0.25},
		{-0.1, 1.2, 1}, // a line fitted to noise: clamped
		{1.5, 1.2, 0},
	} {
		if got := serviceSCV(tc.fixed, tc.mean); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("serviceSCV(%v, %v) = %v, want %v", tc.fixed, tc.mean, got, tc.want)
		}
	}
	if got := serviceSCV(0.1, 0); !math.IsNaN(got) {
		t.Errorf("no mean: %v, want NaN", got)
	}
}
