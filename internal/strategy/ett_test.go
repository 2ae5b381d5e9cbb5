package strategy_test

import (
	"math"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// TestETTEstimateIsEquationOne checks ETT(n,s) against the formula, cost
// source by cost source.
func TestETTEstimateIsEquationOne(t *testing.T) {
	t.Parallel()
	params := map[string]any{
		"inflight":    0,
		"cpu_cost":    0.002,
		"data_cost":   100,
		"bw_capacity": 1e6,
		"capacities":  map[string]any{"r1": map[string]any{"cpu": 4, "bw": 1e7}, "http://r2.test": map[string]any{"cpu": 2}},
		"paths":       map[string]any{"/count": map[string]any{"cpu": 0.03}, "/": map[string]any{"data": 7}},
	}
	env, _ := seededEnv(1)
	s := mustBuild(t, strategy.ETTName, params, env)
	rs := replicaSet(1, 1, 3)
	rs[2].Address = "http://r2.test/"
	for i, cpu := range []float64{0.5, 0.25, 0} {
		rs[i].Reported = true
		rs[i].Metrics.CPU = cpu
		rs[i].Metrics.BW = 0.5
	}
	p := s.Picker(rs)
	// P and W: r0 the defaults (1, 1e6); r1 listed by id (4, 1e7); r2
	// listed by address, CPU only (2; W the default times weight 3).
	caps := [][2]float64{{1, 1e6}, {4, 1e7}, {2, 3e6}}
	cpu := []float64{0.5, 0.25, 0}
	tests := []struct {
		name      string
		req       strategy.Request
		cc, dSize float64
	}{
		{"defaults", strategy.Request{Path: "/x"}, 0.002, 7},
		// "/count" prices the CPU only: its data is data_cost's.
		{"path table", strategy.Request{Path: "/count/30000"}, 0.03, 100},
		{"header wins", strategy.Request{Path: "/count/1", Cost: 0.5, Size: 1e5}, 0.5, 1e5},
		{"header cpu only", strategy.Request{Path: "/count/1", Cost: 0.5}, 0.5, 100},
		{"prefix boundary", strategy.Request{Path: "/counter"}, 0.002, 7},
		// "/" prices every path, the empty one too.
		{"no path", strategy.Request{}, 0.002, 7},
	}
	for _, tt := range tests {
		for i := range rs {
			want := tt.cc/(caps[i][0]*(1-cpu[i])) + tt.dSize/(caps[i][1]*0.5)
			if got := strategy.ETTEstimate(p, &tt.req, i); math.Abs(got-want) > 1e-12*want {
				t.Errorf("%s: ETT on r%d = %v, want %v", tt.name, i, got, want)
			}
		}
	}
}

func TestETTPickDoesNotAllocate(t *testing.T) {
	env, _ := seededEnv(1)
	s := mustBuild(t, strategy.ETTName, map[string]any{"paths": map[string]any{"/a": map[string]any{"cpu": 1}, "/a/b": map[string]any{"cpu": 2}}}, env)
	p := s.Picker(loadedGroup())
	for _, req := range []*strategy.Request{{Path: "/a/b/c"}, {Path: "/zzz", Cost: 1, Size: 2}} {
		if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(req) }); allocs != 0 {
			t.Errorf("Pick(%+v) allocates %v times", *req, allocs)
		}
	}
}
