package strategy_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

func TestALBLProbesWhatThePaperDoes(t *testing.T) {
	t.Parallel()
	env, clock := seededEnv(1)
	s := mustBuild(t, strategy.ALBLName, map[string]any{"object": "/1k.bin", "period": "2s"}, env)
	p, ok := s.(strategy.Prober)
	if !ok {
		t.Fatal("albl is not a Prober")
	}
	spec := p.Probes()
	want := []strategy.Probe{
		{Kind: strategy.ProbeTCPConnect, Timeout: 25 * time.Millisecond},
		{Kind: strategy.ProbeHTTPGet, Path: "/1k.bin", Timeout: 500 * time.Millisecond},
	}
	if spec.Period != 2*time.Second || spec.Async || len(spec.Probes) != 2 || spec.Probes[0] != want[0] || spec.Probes[1] != want[1] {
		t.Errorf("Probes() = %+v, want period 2s, round-based, probes %+v", spec, want)
	}
	rs := replicaSet(1, 1, 1)
	if got := p.ProbeTargets(rs, clock.Now(), nil); len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("ProbeTargets = %v, want every replica", got)
	}
}

// TestALBLWeightsAreNormalised checks the equations' weights sum to 1
// whatever the measurements.
func TestALBLWeightsAreNormalised(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		threshold string
		http      []time.Duration
		delay     []time.Duration
		eq        int
	}{
		{"eq5", "50ms", []time.Duration{time.Millisecond, 7 * time.Millisecond, 40 * time.Millisecond}, []time.Duration{100 * time.Microsecond, time.Millisecond, 3 * time.Millisecond}, 5},
		{"eq6", "1ms", []time.Duration{time.Millisecond, 7 * time.Millisecond, 40 * time.Millisecond}, []time.Duration{100 * time.Microsecond, time.Millisecond, 3 * time.Millisecond}, 6},
		{"eq6 noisy delay above http", "0s", []time.Duration{time.Millisecond, 2 * time.Millisecond}, []time.Duration{3 * time.Millisecond, time.Millisecond}, 6},
		{"zero times", "50ms", []time.Duration{0, 0}, []time.Duration{0, time.Millisecond}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, clock := seededEnv(1)
			s := mustBuild(t, strategy.ALBLName, map[string]any{"threshold": tt.threshold}, env)
			rs := replicaSet(make([]float64, len(tt.http))...)
			var results []strategy.ProbeResult
			for i, r := range rs {
				results = append(results,
					strategy.ProbeResult{Replica: r.ID, Kind: strategy.ProbeHTTPGet, OK: true, Took: tt.http[i]},
					strategy.ProbeResult{Replica: r.ID, Kind: strategy.ProbeTCPConnect, OK: true, Took: tt.delay[i]})
			}
			clock.Advance(time.Second)
			s.(strategy.Prober).Probed(results, clock.Now())
			w, eq := strategy.ALBLWeightsOf(s)
			if eq != tt.eq {
				t.Errorf("equation %d, want %d", eq, tt.eq)
			}
			var sum float64
			for id, x := range w {
				if !(x > 0) || math.IsInf(x, 0) {
					t.Errorf("weight of %s = %v", id, x)
				}
				sum += x
			}
			if math.Abs(sum-1) > 1e-9 || len(w) != len(rs) {
				t.Errorf("weights %v sum to %v, want 1 over %d replicas", w, sum, len(rs))
			}
		})
	}
}

// TestALBLProbedConcurrentWithPickers runs rounds while pickers are built
// and used, for the race detector.
func TestALBLProbedConcurrentWithPickers(t *testing.T) {
	t.Parallel()
	env, clock := seededEnv(3)
	s := mustBuild(t, strategy.ALBLName, nil, env)
	p := s.(strategy.Prober)
	rs := replicaSet(1, 1, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			clock.Advance(time.Second)
			p.Probed([]strategy.ProbeResult{
				{Replica: "r0", Kind: strategy.ProbeHTTPGet, OK: true, Took: time.Duration(i%5+1) * time.Millisecond},
				{Replica: "r0", Kind: strategy.ProbeTCPConnect, OK: i%7 != 0, Took: time.Millisecond},
				{Replica: "r1", Kind: strategy.ProbeHTTPGet, OK: true, Took: 3 * time.Millisecond},
				{Replica: "r1", Kind: strategy.ProbeTCPConnect, OK: true, Took: time.Millisecond},
			}, clock.Now())
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 200 {
				picker := s.Picker(rs)
				for range 10 {
					if _, err := picker.Pick(&strategy.Request{}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestALBLPickDoesNotAllocateAfterProbes(t *testing.T) {
	env, clock := seededEnv(1)
	s := mustBuild(t, strategy.ALBLName, nil, env)
	clock.Advance(time.Second)
	s.(strategy.Prober).Probed([]strategy.ProbeResult{
		{Replica: "r0", Kind: strategy.ProbeHTTPGet, OK: true, Took: 3 * time.Millisecond},
		{Replica: "r0", Kind: strategy.ProbeTCPConnect, OK: true, Took: 170 * time.Microsecond},
		{Replica: "r1", Kind: strategy.ProbeHTTPGet, OK: true, Took: 9 * time.Millisecond},
		{Replica: "r1", Kind: strategy.ProbeTCPConnect, OK: true, Took: 2 * time.Millisecond},
	}, clock.Now())
	p := s.Picker(replicaSet(1, 1, 1))
	req := &strategy.Request{}
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(req) }); allocs != 0 {
		t.Errorf("Pick allocates %v times", allocs)
	}
}
