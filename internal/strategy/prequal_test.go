package strategy_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestPrequalProbesAsynchronously(t *testing.T) {
	t.Parallel()
	env, _ := seededEnv(1)
	s := mustBuild(t, strategy.PrequalName, nil, env)
	spec := s.(strategy.Prober).Probes()
	if !spec.Async || spec.Period != 10*time.Millisecond || len(spec.Probes) != 1 ||
		spec.Probes[0] != (strategy.Probe{Kind: strategy.ProbeLoad, Path: "/fulcrum/probe", Timeout: 100 * time.Millisecond}) {
		t.Errorf("Probes() = %+v", spec)
	}
}

// load feeds one probe answer.
func load(p strategy.Prober, id string, rif, latency float64, now time.Time) {
	p.Probed([]strategy.ProbeResult{{Replica: id, Kind: strategy.ProbeLoad, OK: true, RIF: rif, LatencyMS: latency}}, now)
}

// TestPrequalAvoidsTheSlowAndTheBusy: calls last one round (the balancer
// counts them in flight meanwhile), so each probe answers with the calls
// the replica got in the round before, plus what others (an antagonist)
// have in flight there.
func TestPrequalAvoidsTheSlowAndTheBusy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		latency    map[string]float64
		antagonist map[string]float64
		check      func(total map[string]int) bool
		want       string
	}{
		{"slow", map[string]float64{"r0": 1, "r1": 1.2, "r2": 50}, nil,
			func(n map[string]int) bool { return n["r2"] < n["r1"] && n["r1"] <= n["r0"] },
			"the slow r2 the fewest, the fastest r0 the most"},
		{"busy", map[string]float64{"r0": 1, "r1": 1, "r2": 1}, map[string]float64{"r0": 10},
			func(n map[string]int) bool { return 3*n["r0"] < n["r1"] && 3*n["r0"] < n["r2"] },
			"r0, with ten calls of others in flight, under a third of the others'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, clock := seededEnv(1)
			s := mustBuild(t, strategy.PrequalName, nil, env)
			p := s.(strategy.Prober)
			rs := replicaSet(1, 1, 1)
			picker := s.Picker(rs)
			total, last := map[string]int{}, map[string]int{}
			for range 200 {
				for _, id := range []string{"r0", "r1", "r2"} {
					load(p, id, float64(last[id])+tt.antagonist[id], tt.latency[id], clock.Now())
				}
				clear(last)
				for range 4 {
					r, _ := picker.Pick(&strategy.Request{})
					r.Live.Inflight.Add(1)
					last[r.ID]++
					total[r.ID]++
				}
				for _, r := range rs {
					r.Live.Inflight.Store(0)
				}
				clock.Advance(10 * time.Millisecond)
			}
			if !tt.check(total) {
				t.Errorf("picks %v: want %s", total, tt.want)
			}
		})
	}
}

func TestPrequalPickDoesNotAllocate(t *testing.T) {
	env, clock := seededEnv(1)
	s := mustBuild(t, strategy.PrequalName, map[string]any{"max_reuse": 1000}, env)
	rs := loadedGroup()
	for i, r := range rs {
		load(s.(strategy.Prober), r.ID, float64(i%3), float64(10-i), clock.Now())
	}
	p := s.Picker(rs)
	req := &strategy.Request{}
	if allocs := testing.AllocsPerRun(500, func() { _, _ = p.Pick(req) }); allocs != 0 {
		t.Errorf("Pick allocates %v times", allocs)
	}
	// The fallback, with a replica failing, does not either.
	empty := mustBuild(t, strategy.PrequalName, nil, env)
	empty.(strategy.Prober).Probed([]strategy.ProbeResult{{Replica: rs[2].ID, Kind: strategy.ProbeLoad}}, clock.Now())
	p = empty.Picker(rs)
	if allocs := testing.AllocsPerRun(500, func() { _, _ = p.Pick(req) }); allocs != 0 {
		t.Errorf("Pick on an empty pool allocates %v times", allocs)
	}
}

// TestPrequalProbedConcurrentWithPicks runs probes, targets and picks at
// once, for the race detector, and checks every pick is a snapshot replica.
func TestPrequalProbedConcurrentWithPicks(t *testing.T) {
	t.Parallel()
	env, clock := seededEnv(5)
	s := mustBuild(t, strategy.PrequalName, map[string]any{"max_reuse": 3, "pool_size": 4}, env)
	p := s.(strategy.Prober)
	rs := replicaSet(1, 1, 1, 1, 1, 1)
	picker := s.Picker(rs)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 500 {
				id := fmt.Sprintf("r%d", (g+i)%len(rs))
				if i%9 == 0 {
					p.Probed([]strategy.ProbeResult{{Replica: id, Kind: strategy.ProbeLoad}}, clock.Now())
				} else {
					load(p, id, float64(i%4), float64(i%13), clock.Now())
				}
				_ = p.ProbeTargets(rs, clock.Now(), nil)
				clock.Advance(time.Millisecond)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				r, err := picker.Pick(&strategy.Request{})
				if err != nil || r != rs[r.Index] {
					t.Errorf("Pick = %v, %v", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPrequalDrawsTiesUniformly: replicas whose probes are equal (an
// agent answers latency 0 for every idle replica) share the picks,
// whatever their places in the pool. The scan once started from a
// rotating slot, which gave a replica the ties in proportion to the gap of
// slots before it: with two probes in slots 0 and 1, 15 of 16 to the first.
func TestPrequalDrawsTiesUniformly(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		rif     float64
		params  map[string]any
		replica int
	}{
		{"cold, latency and rif equal", 0, nil, 2},
		{"cold, three replicas", 0, nil, 3},
		{"all hot, rif equal", 5, map[string]any{"q_rif": 0}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, clock := seededEnv(7)
			s := mustBuild(t, strategy.PrequalName, tt.params, env)
			weights := make([]float64, tt.replica)
			for i := range weights {
				weights[i] = 1
			}
			rs := replicaSet(weights...)
			const rounds = 300
			picks := probeAndPick(t, s, rs, clock, rounds, func(int) (float64, float64) { return tt.rif, 0 })
			fair := rounds * 4 / tt.replica
			for _, r := range rs {
				if n := picks[r.ID]; n < fair*8/10 || n > fair*12/10 {
					t.Errorf("picks %v: want each replica within 20%% of %d", picks, fair)
					break
				}
			}
		})
	}
}

// TestPrequalTolerance: cold probes whose latencies lie within the
// tolerance of the least are ties, decided by RIF and then by a draw;
// outside it the lower latency still takes every pick.
func TestPrequalTolerance(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		tolerance float64
		latency   [2]float64
		rif       [2]float64
		want      func(r0, r1 int) bool
		wantText  string
	}{
		{"strict, as the paper", 1, [2]float64{1, 1.05}, [2]float64{0, 0},
			func(r0, r1 int) bool { return r1 == 0 }, "every pick to r0"},
		{"within the tolerance", 1.1, [2]float64{1, 1.05}, [2]float64{0, 0},
			func(r0, r1 int) bool { return r0 > 500 && r1 > 500 }, "both over 500 of 1200"},
		{"outside the tolerance", 1.1, [2]float64{1, 1.2}, [2]float64{0, 0},
			func(r0, r1 int) bool { return r1 == 0 }, "every pick to r0"},
		{"within, then the lower RIF", 1.1, [2]float64{1, 1.05}, [2]float64{2, 1},
			func(r0, r1 int) bool { return r0 == 0 }, "every pick to r1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, clock := seededEnv(3)
			// q_rif 1: no probe is hot, so latency decides first.
			s := mustBuild(t, strategy.PrequalName, map[string]any{"tolerance": tt.tolerance, "q_rif": 1}, env)
			picks := probeAndPick(t, s, replicaSet(1, 1), clock, 300, func(i int) (float64, float64) { return tt.rif[i], tt.latency[i] })
			if !tt.want(picks["r0"], picks["r1"]) {
				t.Errorf("picks %v: want %s", picks, tt.wantText)
			}
		})
	}
}

// probeAndPick runs rounds of 10 ms: every replica's probe answers
// answer(its index) (RIF, latency), then four picks. It returns the picks
// per replica id.
func probeAndPick(t *testing.T, s strategy.Strategy, rs []*strategy.Replica, clock *clocktest.Manual, rounds int, answer func(int) (rif, latency float64)) map[string]int {
	t.Helper()
	picker := s.Picker(rs)
	picks := map[string]int{}
	for range rounds {
		for i, r := range rs {
			rif, latency := answer(i)
			load(s.(strategy.Prober), r.ID, rif, latency, clock.Now())
		}
		for range 4 {
			r, err := picker.Pick(&strategy.Request{})
			if err != nil {
				t.Fatal(err)
			}
			picks[r.ID]++
		}
		clock.Advance(10 * time.Millisecond)
	}
	return picks
}
