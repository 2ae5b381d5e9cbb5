package analyzer_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// mixRun is what a simulated mix did on the analyzer's clock.
type mixRun struct {
	// cv is the CV of the replicas' true loads after each round.
	cv []float64
	// lastMove is the round (from 1) after which a client last moved; 0:
	// none moved.
	lastMove int
	log      []string
}

// runMix binds the clients (rates, at random with rng) to replicas
// r1..rN, and runs rounds report intervals of the strategy (params in
// scripttest's key=value form) with measured rates off by up to ±jitter.
func runMix(t *testing.T, replicas int, rates []float64, rng *rand.Rand, rounds int, jitter float64, params ...string) mixRun {
	t.Helper()
	s := newScenario(t)
	cmd := func(name string, pos []string, kv ...string) scripttest.Cmd {
		c := scripttest.Cmd{Name: name, Pos: pos, Args: map[string]string{}}
		for _, a := range kv {
			k, v, _ := strings.Cut(a, "=")
			c.Args[k] = v
			c.Order = append(c.Order, k)
		}
		return c
	}
	for i := range replicas {
		s.cmdAddReplica(cmd("add-replica", nil, fmt.Sprintf("id=r%d", i+1)))
	}
	if out := s.cmdStrategy(cmd("strategy", []string{strategy.MinimumDispersionName}, params...)); out != "ok" {
		t.Fatalf("strategy: %s", out)
	}
	var world []string
	for i, r := range rates {
		world = append(world, fmt.Sprintf("c%d=%g@r%d", i+1, r, rng.IntN(replicas)+1))
	}
	s.cmdWorld(cmd("world", nil, world...))
	var run mixRun
	for round := 1; round <= rounds; round++ {
		loads, moved := s.simRound(jitter, rng)
		var true []float64
		for _, in := range s.infos {
			true = append(true, s.worldLoad(in.ID))
		}
		run.cv = append(run.cv, strategy.CV(true, nil))
		if len(moved) > 0 {
			run.lastMove = round
		}
		run.log = append(run.log, fmt.Sprintf("r%d t=%s %s cv=%.3f moved %v", round, s.elapsed(), loads, run.cv[round-1], moved))
	}
	return run
}

// optimalCV is the lowest CV of the loads over every assignment of the
// clients to n interchangeable replicas of equal weight: an exact branch
// and bound, written apart from the planner's so that it can check it.
// The sum of squared deviations is minimised (the mean is fixed); clients
// go largest first, a client never to a replica with the same load as one
// tried before (replicas are interchangeable: this breaks the symmetry),
// and a branch is cut when the replicas already above the mean, which
// only grow, cost as much as the best found.
func optimalCV(n int, rates []float64) float64 {
	rs := slices.Clone(rates)
	slices.SortFunc(rs, func(a, b float64) int { return cmpDesc(a, b) })
	total := 0.0
	for _, r := range rs {
		total += r
	}
	mean := total / float64(n)
	loads := make([]float64, n)
	// The bound to beat starts at the largest-first greedy assignment's.
	for _, r := range rs {
		loads[slices.Index(loads, slices.Min(loads))] += r
	}
	greedy := 0.0
	for _, l := range loads {
		greedy += (l - mean) * (l - mean)
	}
	best := greedy + 1e-9 // so that an assignment as good is found
	clear(loads)
	var dfs func(k int)
	dfs = func(k int) {
		lb := 0.0
		for _, l := range loads {
			if l > mean {
				lb += (l - mean) * (l - mean)
			}
		}
		if lb >= best-1e-9 {
			return
		}
		if k == len(rs) {
			sq := 0.0
			for _, l := range loads {
				sq += (l - mean) * (l - mean)
			}
			best = min(best, sq)
			return
		}
		for j := range n {
			if slices.Contains(loads[:j], loads[j]) {
				continue
			}
			loads[j] += rs[k]
			dfs(k + 1)
			loads[j] -= rs[k]
		}
	}
	dfs(0)
	return math.Sqrt(min(best, greedy)/float64(n)) / mean
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func TestOptimalCV(t *testing.T) {
	t.Parallel()
	cv := func(loads ...float64) float64 { return strategy.CV(loads, nil) }
	for _, tc := range []struct {
		n     int
		rates []float64
		want  float64
	}{
		{2, []float64{10, 10}, 0},
		{2, []float64{30, 10}, cv(30, 10)},
		// 50+30 | 50 | 40+30 beats 50+30 | 50+30 | 40 and 50 | 50 | 40+30+30.
		{3, []float64{50, 50, 40, 30, 30}, cv(80, 50, 70)},
		// The greedy (largest first) gives 70 | 60 | 60: 40+30 | 30+30 | 20+20+20.
		{3, []float64{40, 30, 30, 30, 20, 20, 20}, cv(70, 60, 60)},
		{3, []float64{30, 30, 20, 20, 20, 20, 20, 20}, cv(60, 60, 60)},
		{4, []float64{100, 100, 50, 50, 100, 100, 50, 50}, 0},
	} {
		if got := optimalCV(tc.n, tc.rates); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("optimalCV(%d, %v) = %.6f, want %.6f", tc.n, tc.rates, got, tc.want)
		}
	}
}

// TestMinimumDispersionMixes: on 20 seeded uneven mixes (3–6 replicas, 2–3
// clients a replica, 10–100 calls/s each, bound at random) with measured
// rates off by ±5%, minimum-dispersion settles within 5 s of simulated
// time at a steady CV of the true loads no higher than max(0.05, the
// optimal CV + 0.02), and no client moves in the last 10 s.
func TestMinimumDispersionMixes(t *testing.T) {
	t.Parallel()
	const (
		rounds      = 40 // 20 s at the scenario's 500 ms interval
		settleRound = 10 // 5 s
		quietRounds = 20 // the last 10 s
	)
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 22))
			n := 3 + rng.IntN(4)
			var rates []float64
			for range n {
				for range 2 + rng.IntN(2) {
					rates = append(rates, float64(10+rng.IntN(91)))
				}
			}
			opt := optimalCV(n, rates)
			bound := max(0.05, opt+0.02)
			run := runMix(t, n, rates, rng, rounds, 0.05)
			final := run.cv[rounds-1]
			steady := true
			for _, cv := range run.cv[settleRound-1:] {
				steady = steady && cv == final
			}
			if run.lastMove > settleRound || run.lastMove > rounds-quietRounds || !steady || final > bound+1e-9 {
				t.Errorf("%d replicas, rates %v: last move after round %d, CV %.3f (steady from 5 s: %v), want ≤ %.3f (optimal %.3f):\n%s",
					n, rates, run.lastMove, final, steady, bound, opt, strings.Join(run.log, "\n"))
			}
		})
	}
}
