package strategy_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestWeightedRoundRobinIsExactAndSmooth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		weights []float64
		cycles  int // picks = cycles × Σweights
		// heaviestRun is the most picks in a row the heaviest replica may
		// get: ⌈W_max / (ΣW − W_max)⌉, the least any schedule can do.
		heaviestRun int
	}{
		{"5,1,1", []float64{5, 1, 1}, 1000, 3},
		{"heavy last", []float64{1, 1, 5}, 1000, 3},
		{"equal is round-robin", []float64{1, 1, 1}, 1000, 1},
		{"3,1", []float64{3, 1}, 1000, 3},
		{"4,2,1", []float64{4, 2, 1}, 1000, 2},
		{"2,3", []float64{2, 3}, 1000, 2},
		{"fractional", []float64{1.5, 0.5}, 1000, 3},
		{"10,1", []float64{10, 1}, 500, 10},
		{"5,5,2,1", []float64{5, 5, 2, 1}, 500, 1},
		{"7,3,2,2,1", []float64{7, 3, 2, 2, 1}, 500, 2},
		{"1..6", []float64{1, 2, 3, 4, 5, 6}, 300, 2}, // r5 ends a generation and starts the next
		{"100,1,1,1", []float64{100, 1, 1, 1}, 50, 34},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var total float64
			for _, w := range tt.weights {
				total += w
			}
			// Any start: each new picker starts at a random point of the
			// schedule.
			for seed := range uint64(5) {
				env, _ := seededEnv(seed)
				rs := replicaSet(tt.weights...)
				p := mustBuild(t, strategy.WeightedRoundRobinName, nil, env).Picker(rs)
				ids := pickN(t, p, &strategy.Request{}, tt.cycles*int(total))
				got := tally(ids)
				for i, r := range rs {
					if want := int(float64(tt.cycles) * tt.weights[i]); got[r.ID] != want {
						t.Errorf("seed %d: %s (weight %v) picked %d times, want exactly %d", seed, r.ID, tt.weights[i], got[r.ID], want)
					}
					// Nobody gets more than one beyond its fair run.
					fair := max(1, int(math.Ceil(tt.weights[i]/(total-tt.weights[i]))))
					if run := longestRun(ids, r.ID); run > fair+1 {
						t.Errorf("seed %d: %s picked %d times in a row, want at most %d", seed, r.ID, run, fair+1)
					}
				}
				heaviest := rs[0]
				for _, r := range rs {
					if r.Weight > heaviest.Weight {
						heaviest = r
					}
				}
				if run := longestRun(ids, heaviest.ID); run > tt.heaviestRun {
					t.Errorf("seed %d: heaviest %s picked %d times in a row, want at most %d", seed, heaviest.ID, run, tt.heaviestRun)
				}
			}
		})
	}
}

func TestWeightedRoundRobinFollowsArbitraryWeights(t *testing.T) {
	t.Parallel()
	weights := []float64{1, math.Pi, math.E, 0.001}
	env, _ := seededEnv(1)
	rs := replicaSet(weights...)
	const picks = 1_000_000
	got := tally(pickN(t, mustBuild(t, strategy.WeightedRoundRobinName, nil, env).Picker(rs), &strategy.Request{}, picks))
	var total float64
	for _, w := range weights {
		total += w
	}
	for i, r := range rs {
		share, want := float64(got[r.ID])/picks, weights[i]/total
		if math.Abs(share-want) > 1e-4 {
			t.Errorf("%s (weight %v) share %.5f, want %.5f", r.ID, weights[i], share, want)
		}
	}
}

func TestWeightedRoundRobinSingleReplica(t *testing.T) {
	t.Parallel()
	env, _ := seededEnv(1)
	rs := replicaSet(0.25)
	for i, id := range pickN(t, mustBuild(t, strategy.WeightedRoundRobinName, nil, env).Picker(rs), nil, 10) {
		if id != "r0" {
			t.Fatalf("pick %d = %s, want r0", i, id)
		}
	}
}

func ExampleNew_weightedRoundRobin() {
	s, _ := strategy.New(strategy.WeightedRoundRobinName, nil, strategy.Env{Rand: strategy.NewRand(1)})
	rs := []*strategy.Replica{
		{Index: 0, ID: "a", Weight: 5, Live: new(strategy.Live)},
		{Index: 1, ID: "b", Weight: 1, Live: new(strategy.Live)},
		{Index: 2, ID: "c", Weight: 1, Live: new(strategy.Live)},
	}
	p := s.Picker(rs)
	for range 14 {
		r, _ := p.Pick(&strategy.Request{})
		fmt.Print(r.ID)
	}
	fmt.Println()
	// Output: aacaabaaacaaba
}
