package strategy_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestPowerOfTwoPicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		params   map[string]any
		weights  []float64
		inflight []int64
		bindings []int64
		script   []int // IntN answers: the first draw, then the second among the rest
		want     string
	}{
		// Draws (0, 0) mean r0 then r1: the second draw skips the first.
		{"fewer in flight wins", nil, []float64{1, 1, 1}, []int64{3, 1, 0}, nil, []int{0, 0}, "r1"},
		{"the first drawn when it has fewer", nil, []float64{1, 1, 1}, []int64{3, 1, 0}, nil, []int{2, 0}, "r2"},
		{"only the two drawn count", nil, []float64{1, 1, 1}, []int64{3, 2, 0}, nil, []int{0, 0}, "r1"},
		{"tie: fewer bound clients", nil, []float64{1, 1}, []int64{1, 1}, []int64{4, 2}, []int{0, 0}, "r1"},
		{"tie: the first drawn", nil, []float64{1, 1}, []int64{1, 1}, []int64{2, 2}, []int{1, 0}, "r1"},
		{"weighted: weight/(active+1)", nil, []float64{1, 4}, []int64{0, 2}, nil, []int{0, 0}, "r1"},
		{"weighted: bias 2 punishes load more", map[string]any{"bias": 2}, []float64{1, 4}, []int64{0, 2}, nil, []int{0, 0}, "r0"},
		{"weighted: bias 0 ignores load", map[string]any{"bias": 0}, []float64{1, 4}, []int64{0, 50}, nil, []int{0, 0}, "r1"},
		{"weighted: tie goes to fewer bindings per weight", nil, []float64{1, 2}, []int64{0, 1}, []int64{3, 4}, []int{0, 0}, "r1"},
		{"single replica", nil, []float64{1}, []int64{9}, nil, []int{0}, "r0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs := withBindings(withInflight(replicaSet(tt.weights...), tt.inflight...), tt.bindings...)
			env := strategy.Env{Rand: &scriptRand{ints: tt.script}}
			got := pickN(t, mustBuild(t, strategy.PowerOfTwoName, tt.params, env).Picker(rs), nil, 1)
			if got[0] != tt.want {
				t.Errorf("pick = %s, want %s", got[0], tt.want)
			}
		})
	}
}

func TestPowerOfTwoDrawsTwoDistinctReplicas(t *testing.T) {
	t.Parallel()
	// With two replicas both are always drawn, so the idle one always wins.
	env, _ := seededEnv(5)
	rs := withInflight(replicaSet(1, 1), 0, 1)
	for i, id := range pickN(t, mustBuild(t, strategy.PowerOfTwoName, nil, env).Picker(rs), nil, 1000) {
		if id != "r0" {
			t.Fatalf("pick %d = %s, want r0: the two draws were the same replica", i, id)
		}
	}
}

func TestPowerOfTwoSpreadsAnIdleGroup(t *testing.T) {
	t.Parallel()
	env, _ := seededEnv(11)
	rs := replicaSet(1, 1, 1)
	got := tally(pickN(t, mustBuild(t, strategy.PowerOfTwoName, nil, env).Picker(rs), nil, 30000))
	for _, r := range rs {
		if n := got[r.ID]; n < 9500 || n > 10500 {
			t.Errorf("%s picked %d times of 30000, want 10000 ± 5%%", r.ID, n)
		}
	}
}

func TestPowerOfTwoAvoidsTheBusiest(t *testing.T) {
	t.Parallel()
	// The busiest of N replicas is never picked: it loses every draw.
	env, _ := seededEnv(2)
	rs := withInflight(replicaSet(1, 1, 1, 1), 1, 9, 1, 2)
	got := tally(pickN(t, mustBuild(t, strategy.PowerOfTwoName, nil, env).Picker(rs), nil, 10000))
	if got["r1"] != 0 {
		t.Errorf("the busiest replica got %d picks, want 0", got["r1"])
	}
	if got["r0"]+got["r2"] <= got["r3"] {
		t.Errorf("picks %v: the least busy should get most", got)
	}
}
