package strategy_test

import (
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// TestConnectionCountingPicks covers least-connections and its weighted
// relatives (wlc, sed, nq), which differ only in the cost they minimise.
func TestConnectionCountingPicks(t *testing.T) {
	t.Parallel()
	const (
		lc  = strategy.LeastConnectionsName
		wlc = strategy.WeightedLeastConnectionsName
		sed = strategy.ShortestExpectedDelayName
		nq  = strategy.NeverQueueName
	)
	tests := []struct {
		name     string
		strategy string
		weights  []float64
		inflight []int64
		bindings []int64
		reported []float64 // reported inflight metric, NaN for none
		want     []string  // acceptable picks
	}{
		{"lc: fewest in flight", lc, []float64{1, 1, 1}, []int64{3, 1, 2}, nil, nil, []string{"r1"}},
		{"lc: active counts 256 inactive", lc, []float64{1, 1}, []int64{1, 0}, []int64{0, 255}, nil, []string{"r1"}},
		{"lc: many inactive outweigh one active", lc, []float64{1, 1}, []int64{1, 0}, []int64{0, 257}, nil, []string{"r0"}},
		{"lc: bindings when nothing is in flight", lc, []float64{1, 1, 1}, nil, []int64{4, 2, 3}, nil, []string{"r1"}},
		{"lc: reported inflight counts", lc, []float64{1, 1}, []int64{0, 2}, nil, []float64{5, nan}, []string{"r1"}},
		{"lc: ignores weights", lc, []float64{10, 1}, []int64{1, 0}, nil, nil, []string{"r1"}},

		{"wlc: C/W favours the heavy", wlc, []float64{3, 1}, []int64{2, 1}, nil, nil, []string{"r0"}},
		{"wlc: equal C/W ties", wlc, []float64{3, 1}, []int64{3, 1}, nil, nil, []string{"r0", "r1"}},
		{"wlc: heavy but too busy", wlc, []float64{3, 1}, []int64{4, 1}, nil, nil, []string{"r1"}},
		{"wlc: an idle light replica wins", wlc, []float64{3, 1}, []int64{1, 0}, nil, nil, []string{"r1"}},

		{"sed: (C+1)/W prefers the heavy over an idle light one", sed, []float64{3, 1}, []int64{1, 0}, nil, nil, []string{"r0"}},
		{"sed: until it has W_h/W_l calls more", sed, []float64{3, 1}, []int64{3, 0}, nil, nil, []string{"r1"}},
		{"sed: bound clients count as much as calls", sed, []float64{2, 1}, nil, []int64{2, 0}, nil, []string{"r1"}},
		{"sed: equal weights is least connections", sed, []float64{2, 2, 2}, []int64{2, 1, 3}, nil, nil, []string{"r1"}},

		{"nq: an idle replica first", nq, []float64{3, 1}, []int64{1, 0}, nil, nil, []string{"r1"}},
		{"nq: reported calls make a replica busy", nq, []float64{3, 1}, []int64{1, 0}, nil, []float64{nan, 1}, []string{"r0"}},
		{"nq: none idle, shortest expected delay", nq, []float64{3, 1}, []int64{1, 1}, nil, nil, []string{"r0"}},
		{"nq: among idle ones, shortest expected delay", nq, []float64{3, 1, 1}, []int64{0, 0, 4}, []int64{1, 0, 0}, nil, []string{"r0"}},
		{"nq: idle light beats busy heavy", nq, []float64{1, 10}, []int64{0, 1}, []int64{200, 0}, nil, []string{"r0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs := withBindings(withInflight(replicaSet(tt.weights...), tt.inflight...), tt.bindings...)
			for i, v := range tt.reported {
				reportInflight(rs[i], v)
			}
			env, _ := seededEnv(1)
			p := mustBuild(t, tt.strategy, nil, env).Picker(rs)
			for i, id := range pickN(t, p, &strategy.Request{}, 2*len(rs)) {
				if !slices.Contains(tt.want, id) {
					t.Fatalf("pick %d = %s, want one of %v", i, id, tt.want)
				}
			}
		})
	}
}

func TestConnectionCountingTiesRotate(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		strategy.LeastConnectionsName, strategy.WeightedLeastConnectionsName,
		strategy.ShortestExpectedDelayName, strategy.NeverQueueName,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env, _ := seededEnv(1)
			// An idle group and concurrent picks that have not bound yet:
			// they spread instead of all taking r0.
			got := tally(pickN(t, mustBuild(t, name, nil, env).Picker(replicaSet(2, 2, 2, 2)), nil, 400))
			for _, id := range []string{"r0", "r1", "r2", "r3"} {
				if got[id] != 100 {
					t.Errorf("%s picked %d times of 400, want 100", id, got[id])
				}
			}
		})
	}
}

func TestLeastConnectionsPicksTheLeastLoaded(t *testing.T) {
	t.Parallel()
	// Each pick binds a client; the group starts uneven and evens out.
	for _, tt := range []struct {
		strategy string
		weights  []float64
		want     []int64 // bindings after the picks
	}{
		{strategy.LeastConnectionsName, []float64{1, 1, 1}, []int64{8, 8, 8}},
		{strategy.WeightedLeastConnectionsName, []float64{2, 1, 1}, []int64{12, 6, 6}},
		{strategy.ShortestExpectedDelayName, []float64{2, 1, 1}, []int64{12, 6, 6}},
	} {
		t.Run(tt.strategy, func(t *testing.T) {
			t.Parallel()
			rs := withBindings(replicaSet(tt.weights...), 6, 0, 3)
			env, _ := seededEnv(1)
			p := mustBuild(t, tt.strategy, nil, env).Picker(rs)
			var total int64
			for _, n := range tt.want {
				total += n
			}
			for range total - 9 {
				r, err := p.Pick(nil)
				if err != nil {
					t.Fatal(err)
				}
				r.Live.Bindings.Add(1)
			}
			for i, r := range rs {
				if got := r.Live.Bindings.Load(); got != tt.want[i] {
					t.Errorf("%s has %d bindings, want %d", r.ID, got, tt.want[i])
				}
			}
		})
	}
}
