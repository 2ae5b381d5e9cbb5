package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRemotingSampleIsExponentialAndReproducible(t *testing.T) {
	t.Parallel()
	const n = 20000
	a := remotingSample(7, n, 30000, 10*time.Millisecond)
	if b := remotingSample(7, n, 30000, 10*time.Millisecond); !slices.Equal(a, b) {
		t.Fatal("the same seed drew different samples")
	}
	if c := remotingSample(8, n, 30000, 10*time.Millisecond); slices.Equal(a, c) {
		t.Fatal("two seeds drew the same sample")
	}
	var sumX, sumGap float64
	above := 0
	for _, c := range a {
		if c.X < 0 || c.Gap < 0 {
			t.Fatalf("negative draw %+v", c)
		}
		sumX += float64(c.X)
		sumGap += float64(c.Gap)
		if float64(c.X) > 30000 {
			above++
		}
	}
	// Means within 3% (their standard error is 0.7%); an exponential
	// has e^-1 of its mass above the mean.
	if m := sumX / n; math.Abs(m/30000-1) > 0.03 {
		t.Errorf("mean X %.0f, want about 30000", m)
	}
	if m := sumGap / n; math.Abs(m/float64(10*time.Millisecond)-1) > 0.03 {
		t.Errorf("mean gap %v, want about 10ms", time.Duration(m))
	}
	if share := float64(above) / n; math.Abs(share-math.Exp(-1)) > 0.02 {
		t.Errorf("share of X above the mean %.3f, want about %.3f (exponential)", share, math.Exp(-1))
	}
}

func TestFillReductionsAgainstRandom(t *testing.T) {
	t.Parallel()
	rows := []RemotingRow{
		{Replicas: 2, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 4, Calls: 10, roundMeans: []float64{2, 6}},
		{Replicas: 2, Utilization: 0.9, Strategy: "random", LatencyMeanMS: 10, Calls: 10, roundMeans: []float64{4, 16}},
		{Replicas: 2, Utilization: 0.5, Strategy: "ett", LatencyMeanMS: 3, Calls: 10},
		{Replicas: 2, Utilization: 0.5, Strategy: "random", LatencyMeanMS: 2, Calls: 10},
		{Replicas: 4, Utilization: 0.9, Strategy: "ett", LatencyMeanMS: 3, Calls: 10},
		{Replicas: 4, Utilization: 0.9, Strategy: "random", Calls: 0},
	}
	fillReductions(rows)
	want := []float64{0.6, 0, -0.5, 0}
	for i, w := range want {
		if r := rows[i].ReductionVsRandom; r == nil || math.Abs(*r-w) > 1e-12 {
			t.Errorf("row %d reduction %v, want %v", i, r, w)
		}
	}
	if got := rows[0].ReductionRounds; !slices.Equal(got, []float64{0.5, 0.625}) {
		t.Errorf("per-round reductions %v, want [0.5 0.625]", got)
	}
	for _, i := range []int{4, 5} {
		if rows[i].ReductionVsRandom != nil {
			t.Errorf("row %d has a reduction %v without a random baseline", i, *rows[i].ReductionVsRandom)
		}
	}

	rep := NewReport("x")
	judgeRemoting(rep, rows)
	var got []string
	for _, tg := range rep.Targets() {
		got = append(got, string(tg.Status))
	}
	// 2 replicas: 60% ≥ 47.6%; 4 replicas: random answered nothing.
	if !slices.Equal(got, []string{string(Met), string(Unknown)}) {
		t.Errorf("targets %v", rep.Targets())
	}
}

func TestRemotingCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Remoting)
		want string
	}{
		{"defaults", func(*Remoting) {}, ""},
		{"too many replicas for the CPU", func(x *Remoting) { x.Replicas = []int{16} }, "--replicas"},
		{"no random", func(x *Remoting) { x.Strategies = []string{"ett"} }, "includes random"},
		{"unknown strategy", func(x *Remoting) { x.Strategies = []string{"random", "nonesuch"} }, "nonesuch"},
		{"twice", func(x *Remoting) { x.Strategies = []string{"random", "random"} }, "once"},
		{"utilisation 0", func(x *Remoting) { x.Utilizations = []float64{0} }, "--utilizations"},
		{"X mean 0", func(x *Remoting) { x.XMean = 0 }, "--x-mean"},
		{"CPU 0", func(x *Remoting) { x.CPU = 0 }, "--cpu"},
		{"report interval", func(x *Remoting) { x.ReportInterval = time.Millisecond }, "--report-interval"},
		{"negative clients", func(x *Remoting) { x.Clients = -1 }, "--clients"},
		{"more rounds than calls", func(x *Remoting) { x.Calls, x.Rounds = 2, 3 }, "--rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newRemoting()
			tc.edit(x)
			err := x.Check(Quick)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestRemotingSizes(t *testing.T) {
	t.Parallel()
	x := newRemoting()
	if s := x.sizes(Full); !slices.Equal(s.replicas, []int{2, 4, 8}) || !slices.Equal(s.utils, []float64{0.5, 0.7, 0.9}) || s.calls != 1000 {
		t.Errorf("full sizes %+v", s)
	}
	if s := x.sizes(Smoke); !slices.Equal(s.replicas, []int{2}) || s.calls != 15 {
		t.Errorf("smoke sizes %+v", s)
	}
	if x.clientsFor(4) != 8 {
		t.Errorf("clients for 4 replicas: %d, want 8", x.clientsFor(4))
	}
}

func TestRemotingPeriodHasTheSmallestQuota(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cpu  float64
		want time.Duration
	}{
		{0.5, 2 * time.Millisecond},
		{0.25, 4 * time.Millisecond},
		{0.125, 8 * time.Millisecond},
		{1.0 / 3, 3 * time.Millisecond},
		{0.1, 10 * time.Millisecond},
		{0.05, 10 * time.Millisecond}, // the testbed's default at most
		{1.5, time.Millisecond},       // the kernel's shortest period
	} {
		if got := remotingPeriod(tc.cpu); got != tc.want {
			t.Errorf("remotingPeriod(%g) = %v, want %v", tc.cpu, got, tc.want)
		}
	}
}

// TestRemotingCapacityValid: a capacity measured while the saturated
// replicas used under 80% of their quotas (the run of 2026-11-22 09:33
// measured 9%: 103 calls/s instead of about 1100) is refused.
func TestRemotingCapacityValid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		used float64
		ok   bool
	}{{0.94, true}, {1, true}, {0.8, true}, {0.79, false}, {0.09, false}, {0, false}} {
		err := remotingCapacityValid(tt.used)
		if (err == nil) != tt.ok {
			t.Errorf("remotingCapacityValid(%v) = %v, want ok %v", tt.used, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "quotas") {
			t.Errorf("remotingCapacityValid(%v): %q does not say what was measured", tt.used, err)
		}
	}
}
