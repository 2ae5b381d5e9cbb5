package strategy_test

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// peakEWMAStep is one step of a peak-ewma scenario: advance the clock,
// observe calls, then pick between r0 and r1 (two replicas: both are
// always drawn, so the pick shows which has the lower load).
type peakEWMAStep struct {
	advance  time.Duration
	observe  []peakEWMAObservation
	inflight []int64 // r0's and r1's calls in flight, when set
	want     string
}

type peakEWMAObservation struct {
	replica int
	rtt     time.Duration
	failed  bool
}

func TestPeakEWMAScenarios(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	obs := func(replica int, rtt time.Duration) peakEWMAObservation {
		return peakEWMAObservation{replica: replica, rtt: rtt}
	}
	tests := []struct {
		name      string
		latencyMS []float64 // reported latency_ms of r0, r1
		steps     []peakEWMAStep
	}{
		{
			name:      "unobserved: reported latency, else default_rtt (5ms)",
			latencyMS: []float64{20, nan},
			steps:     []peakEWMAStep{{want: "r1"}},
		},
		{
			name:      "unobserved: reported latency below the default",
			latencyMS: []float64{2, nan},
			steps:     []peakEWMAStep{{want: "r0"}},
		},
		{
			name:      "an observation overrides the reported latency",
			latencyMS: []float64{2, nan},
			steps:     []peakEWMAStep{{observe: []peakEWMAObservation{obs(0, 8*ms)}, want: "r1"}},
		},
		{
			name: "lower observed cost wins",
			steps: []peakEWMAStep{
				{observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, want: "r0"},
			},
		},
		{
			name: "load is cost × (inflight + 1)",
			steps: []peakEWMAStep{
				{observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, inflight: []int64{1, 0}, want: "r0"}, // 20 vs 20: the first drawn
				{inflight: []int64{2, 0}, want: "r1"}, // 30 vs 20
				{inflight: []int64{2, 1}, want: "r0"}, // 30 vs 40
			},
		},
		{
			// One slow call costs at once; lower ones only blend in with
			// w = e^(−Δt/τ), τ = 10s: 100 → 43.1 → 22.2 → 14.5 ms against
			// a steady 20ms.
			name: "a peak counts at once and decays with time",
			steps: []peakEWMAStep{
				{observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, want: "r0"},
				{advance: time.Second, observe: []peakEWMAObservation{obs(0, 100*ms), obs(1, 20*ms)}, want: "r1"},
				{advance: 10 * time.Second, observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, want: "r1"},
				{advance: 10 * time.Second, observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, want: "r1"},
				{advance: 10 * time.Second, observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, want: "r0"},
			},
		},
		{
			// Unobserved, a cost decays toward zero, so a replica that was
			// slow is tried again: 100ms·e^−2 = 13.5ms after 20s.
			name: "a quiet replica is tried again",
			steps: []peakEWMAStep{
				{observe: []peakEWMAObservation{obs(0, 100*ms)}, want: "r1"},
				{advance: 20 * time.Second, observe: []peakEWMAObservation{obs(1, 20*ms)}, want: "r0"},
			},
		},
		{
			// r1, never reached by a call and reporting no latency,
			// starts at default_rtt when first weighed and decays like an
			// observed cost: 5ms·e^−1.5 = 1.1ms after 15s, 5ms·e^−1.7 =
			// 0.9ms after 17s, against r0's steady 1ms.
			name: "an unobserved replica's default decays",
			steps: []peakEWMAStep{
				{observe: []peakEWMAObservation{obs(0, ms)}, want: "r0"},
				{advance: 15 * time.Second, observe: []peakEWMAObservation{obs(0, ms)}, want: "r0"},
				{advance: 2 * time.Second, observe: []peakEWMAObservation{obs(0, ms)}, want: "r1"},
			},
		},
		{
			name: "a failed call counts as at least failure_rtt",
			steps: []peakEWMAStep{
				{observe: []peakEWMAObservation{obs(0, 10*ms), obs(1, 20*ms)}, want: "r0"},
				{observe: []peakEWMAObservation{{replica: 0, rtt: time.Millisecond, failed: true}}, want: "r1"},
				// 1s decays below 20ms after τ·ln(50) ≈ 39s.
				{advance: 35 * time.Second, observe: []peakEWMAObservation{obs(1, 20*ms)}, want: "r1"},
				{advance: 5 * time.Second, observe: []peakEWMAObservation{obs(1, 20*ms)}, want: "r0"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, clock := seededEnv(1)
			env.Rand = &scriptRand{ints: []int{0}} // draws r0, then r1
			s := mustBuild(t, strategy.PeakEWMAName, nil, env)
			o := s.(strategy.Observer)
			rs := replicaSet(1, 1)
			for i, v := range tt.latencyMS {
				rs[i].Metrics.LatencyMS = v
			}
			p := s.Picker(rs)
			for i, st := range tt.steps {
				clock.Advance(st.advance)
				for _, ob := range st.observe {
					o.Observe(rs[ob.replica], ob.rtt, ob.failed)
				}
				if st.inflight != nil {
					withInflight(rs, st.inflight...)
				}
				if got := pickN(t, p, nil, 1)[0]; got != st.want {
					t.Fatalf("step %d: pick = %s, want %s", i, got, st.want)
				}
			}
		})
	}
}

func TestPeakEWMADecayParam(t *testing.T) {
	t.Parallel()
	// With τ = 1s the 100ms peak of r0 is forgotten ten times faster than
	// by default: 100·e^−3 = 5ms < 20ms after 3s.
	env, clock := seededEnv(1)
	env.Rand = &scriptRand{ints: []int{0}}
	s := mustBuild(t, strategy.PeakEWMAName, map[string]any{"decay": "1s"}, env)
	o := s.(strategy.Observer)
	rs := replicaSet(1, 1)
	p := s.Picker(rs)
	o.Observe(rs[0], 100*time.Millisecond, false)
	clock.Advance(3 * time.Second)
	o.Observe(rs[1], 20*time.Millisecond, false)
	if got := pickN(t, p, nil, 1)[0]; got != "r0" {
		t.Errorf("pick = %s, want r0", got)
	}
}

func TestPeakEWMAAvoidsASlowReplica(t *testing.T) {
	t.Parallel()
	// Costs live with the replica (Live), so a picker built after the
	// observation knows it.
	env, _ := seededEnv(3)
	s := mustBuild(t, strategy.PeakEWMAName, nil, env)
	rs := replicaSet(1, 1, 1)
	s.(strategy.Observer).Observe(rs[2], time.Second, false)
	got := tally(pickN(t, s.Picker(rs), nil, 3000))
	if got["r2"] != 0 {
		t.Errorf("the slow replica got %d of 3000 picks, want 0", got["r2"])
	}
	if got["r0"] < 1000 || got["r1"] < 1000 {
		t.Errorf("picks %v, want the two fast replicas to share", got)
	}
}
