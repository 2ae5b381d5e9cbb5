package strategy_test

import (
	"fmt"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestRoundRobinTakesTurns(t *testing.T) {
	t.Parallel()
	for _, start := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("start %d", start), func(t *testing.T) {
			t.Parallel()
			env := strategy.Env{Rand: &scriptRand{ints: []int{start}}}
			rs := replicaSet(5, 1, 1) // weights are ignored
			ids := pickN(t, mustBuild(t, strategy.RoundRobinName, nil, env).Picker(rs), &strategy.Request{}, 3000)
			if ids[0] != rs[start].ID {
				t.Errorf("first pick %s, want %s (the random start)", ids[0], rs[start].ID)
			}
			for i := 1; i < len(ids); i++ {
				prev, cur := ids[i-1], ids[i]
				if want := rs[(indexOf(rs, prev)+1)%len(rs)].ID; cur != want {
					t.Fatalf("pick %d: %s after %s, want %s", i, cur, prev, want)
				}
			}
			for id, n := range tally(ids) {
				if n != 1000 {
					t.Errorf("%s picked %d times, want 1000", id, n)
				}
			}
		})
	}
}

func TestRoundRobinIgnoresLoad(t *testing.T) {
	t.Parallel()
	env, _ := seededEnv(3)
	rs := withInflight(replicaSet(1, 1), 100, 0)
	got := tally(pickN(t, mustBuild(t, strategy.RoundRobinName, nil, env).Picker(rs), &strategy.Request{}, 10))
	if got["r0"] != 5 || got["r1"] != 5 {
		t.Errorf("picks = %v, want 5 each", got)
	}
}

func indexOf(rs []*strategy.Replica, id string) int {
	for i, r := range rs {
		if r.ID == id {
			return i
		}
	}
	return -1
}

// A group builds a new picker at every analyzer step; the turn must carry
// over, or clients arriving a step apart would be placed at random.
func TestRoundRobinTurnOutlivesPickers(t *testing.T) {
	t.Parallel()
	for _, name := range []string{strategy.RoundRobinName, strategy.WeightedRoundRobinName} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustBuild(t, name, nil, strategy.Env{Rand: strategy.NewRand(7)})
			rs := replicaSet(1, 1, 1)
			var ids []string
			for range 9 {
				ids = append(ids, pickN(t, s.Picker(replicaSet(1, 1, 1)), &strategy.Request{}, 1)...)
			}
			for i := 1; i < len(ids); i++ {
				if want := rs[(indexOf(rs, ids[i-1])+1)%len(rs)].ID; ids[i] != want {
					t.Fatalf("picks %v: %s after %s, want %s (one pick per new picker)", ids, ids[i], ids[i-1], want)
				}
			}
		})
	}
}
