package strategy_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestRandomFollowsItsRand(t *testing.T) {
	t.Parallel()
	env := strategy.Env{Rand: &scriptRand{ints: []int{2, 0, 3, 3, 1}}}
	p := mustBuild(t, strategy.RandomName, nil, env).Picker(replicaSet(1, 1, 1, 1))
	got := pickN(t, p, &strategy.Request{}, 5)
	want := []string{"r2", "r0", "r3", "r3", "r1"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("picks = %v, want %v", got, want)
		}
	}
}

func TestRandomIsUniform(t *testing.T) {
	t.Parallel()
	env, _ := seededEnv(42)
	rs := withInflight(replicaSet(8, 1, 1, 1), 0, 50, 0, 0) // weights and load ignored
	got := tally(pickN(t, mustBuild(t, strategy.RandomName, nil, env).Picker(rs), &strategy.Request{}, 40000))
	for _, r := range rs {
		if n := got[r.ID]; n < 9500 || n > 10500 {
			t.Errorf("%s picked %d times of 40000, want 10000 ± 5%%", r.ID, n)
		}
	}
}
