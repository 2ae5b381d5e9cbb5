package strategy_test

import (
	"math"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestETTEstimateMS(t *testing.T) {
	t.Parallel()
	s, err := strategy.New(strategy.ETTName, map[string]any{
		"cpu_capacity": 2.0, // cores
		"bw_capacity":  1e6, // bytes/s
		"paths": map[string]any{
			"/primes": map[string]any{"cpu": 0.5},               // 0.5 s of a core on 2 cores: 250 ms
			"/upload": map[string]any{"cpu": 0.01, "data": 2e5}, // 5 ms + 200 ms
		},
	}, strategy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	e := strategy.EstimatorOf(s)
	for _, tt := range []struct {
		path string
		want float64
	}{
		{"/primes/7", 250},
		{"/upload", 205},
		{"/other", 0.5}, // cpu_cost 0.001 s on 2 cores
	} {
		if got := e.EstimateMS(tt.path); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("EstimateMS(%q) = %g, want %g", tt.path, got, tt.want)
		}
	}
}

func TestEstimatorOfOtherStrategies(t *testing.T) {
	t.Parallel()
	s, err := strategy.New(strategy.RoundRobinName, nil, strategy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strategy.EstimatorOf(s).EstimateMS("/anything"); got != 1 {
		t.Fatalf("EstimateMS with ett's defaults = %g ms, want 1 (cpu_cost 0.001 s on a capacity of 1)", got)
	}
}
