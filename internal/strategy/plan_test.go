package strategy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func clients(kv ...any) []protocol.ClientRate {
	var out []protocol.ClientRate
	for i := 0; i < len(kv); i += 2 {
		out = append(out, protocol.ClientRate{ID: kv[i].(string), Rate: float64(kv[i+1].(int))})
	}
	return out
}

func sumRates(cs []protocol.ClientRate) float64 {
	s := 0.0
	for _, c := range cs {
		s += c.Rate
	}
	return s
}

func planReplica(id string, cs []protocol.ClientRate) PlanReplica {
	return PlanReplica{ID: id, Weight: 1, Load: sumRates(cs), Clients: cs}
}

func TestPlanMoves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		replicas  []PlanReplica
		opt       PlanOptions
		wantMoves int
		wantAfter float64
	}{
		{
			name: "the TAO paper demo mix, all badly bound",
			replicas: []PlanReplica{
				planReplica("a", clients("h1", 100, "h2", 100, "h3", 100, "h4", 100)),
				planReplica("b", clients("l1", 50, "l2", 50, "l3", 50, "l4", 50)),
				planReplica("c", nil),
				planReplica("d", nil),
			},
			opt:       PlanOptions{MinImprovement: 0.05},
			wantMoves: 6,
			wantAfter: 0,
		},
		{
			name: "10 and 11 unsplittable stay put",
			replicas: []PlanReplica{
				planReplica("a", clients("c1", 10)),
				planReplica("b", clients("c2", 11)),
			},
			opt:       PlanOptions{},
			wantMoves: 0,
			wantAfter: 0.5 / 10.5,
		},
		{
			name: "one move rather than a swap of the same effect",
			replicas: []PlanReplica{
				planReplica("a", clients("c1", 100, "c2", 50, "c3", 50)),
				planReplica("b", clients("c4", 100)),
			},
			wantMoves: 1,
			wantAfter: 0,
		},
		{
			name: "an improvement below MinImprovement is not a plan",
			replicas: []PlanReplica{
				planReplica("a", clients("c1", 52, "c2", 4)),
				planReplica("b", clients("c3", 50)),
			},
			opt:       PlanOptions{MinImprovement: 0.10},
			wantMoves: 0,
			wantAfter: 3.0 / 53,
		},
		{
			name: "residual load stays where it is",
			replicas: []PlanReplica{
				{ID: "a", Weight: 1, Load: 300, Clients: clients("c1", 50, "c2", 50)},
				{ID: "b", Weight: 1, Load: 0},
			},
			wantMoves: 2,
			wantAfter: 50.0 / 150,
		},
		{
			name: "weights: the mean is per unit of weight",
			replicas: []PlanReplica{
				{ID: "big", Weight: 3, Load: 0},
				planReplica("s", clients("c1", 10, "c2", 10, "c3", 10, "c4", 10)),
			},
			wantMoves: 3,
			wantAfter: 0,
		},
		{
			name: "a client listed twice (mid-move) is not moved",
			replicas: []PlanReplica{
				planReplica("a", clients("c1", 100, "dup", 100)),
				planReplica("b", clients("dup", 100)),
				planReplica("c", nil),
			},
			wantMoves: 1,
			wantAfter: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := PlanMoves(tt.replicas, tt.opt)
			if len(p.Moves) != tt.wantMoves {
				t.Fatalf("moves = %v, want %d", p.Moves, tt.wantMoves)
			}
			if math.Abs(p.After-tt.wantAfter) > 1e-9 {
				t.Errorf("after = %v, want %v (moves %v)", p.After, tt.wantAfter, p.Moves)
			}
			if !p.Exact {
				t.Errorf("not exact on a small instance")
			}
			// The projected loads are the loads after the moves.
			loads := map[string]float64{}
			for _, r := range tt.replicas {
				loads[r.ID] = r.Load
			}
			for _, m := range p.Moves {
				if m.Client == "dup" {
					t.Errorf("moved a client listed twice: %v", m)
				}
				loads[m.From] -= m.Rate
				loads[m.To] += m.Rate
			}
			for i, r := range tt.replicas {
				if math.Abs(max(loads[r.ID], p.Loads[i])-min(loads[r.ID], p.Loads[i])) > 1e-9 && loads[r.ID] >= 0 {
					t.Errorf("projected load of %s = %v, moves give %v", r.ID, p.Loads[i], loads[r.ID])
				}
			}
		})
	}
}

func TestPlanMovesGroupsBySource(t *testing.T) {
	t.Parallel()
	p := PlanMoves([]PlanReplica{
		planReplica("a", clients("a1", 100, "a2", 100, "a3", 100)),
		planReplica("b", clients("b1", 60, "b2", 60, "b3", 60)),
		planReplica("c", nil),
		planReplica("d", nil),
	}, PlanOptions{})
	for i := 1; i < len(p.Moves); i++ {
		if p.Moves[i].From == "a" && p.Moves[i-1].From == "b" {
			t.Fatalf("moves not grouped by source in input order: %v", p.Moves)
		}
	}
}

// bruteCost is the least spread + moveCost·moves over every assignment.
// bruteCost is the least score + moveCost·moves over every assignment, the
// score being the spread or, with byCV, the CV.
func bruteCost(base, w, rates []float64, start []int, moveCost float64, byCV bool) float64 {
	n, m := len(w), len(rates)
	assign := make([]int, m)
	best := math.Inf(1)
	var rec func(k int)
	rec = func(k int) {
		if k == m {
			loads := slices.Clone(base)
			moves := 0
			for i, j := range assign {
				loads[j] += rates[i]
				if start != nil && start[i] != j {
					moves++
				}
			}
			score := Spread(loads, w)
			if byCV {
				score = CV(loads, w)
			}
			best = min(best, score+moveCost*float64(moves))
			return
		}
		for j := range n {
			assign[k] = j
			rec(k + 1)
		}
	}
	rec(0)
	return best
}

func TestPlanMovesMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 2 + rng.IntN(3)
		m := 1 + rng.IntN(7)
		rs := make([]PlanReplica, n)
		w := make([]float64, n)
		base := make([]float64, n)
		for i := range rs {
			w[i] = float64(1 + rng.IntN(3))
			base[i] = float64(rng.IntN(3) * 10)
			rs[i] = PlanReplica{ID: fmt.Sprint("r", i), Weight: w[i], Load: base[i]}
		}
		rates := make([]float64, m)
		start := make([]int, m)
		for k := range rates {
			rates[k] = float64(1 + rng.IntN(100))
			start[k] = rng.IntN(n)
			rs[start[k]].Clients = append(rs[start[k]].Clients, protocol.ClientRate{ID: fmt.Sprint("c", k), Rate: rates[k]})
			rs[start[k]].Load += rates[k]
		}
		p := PlanMoves(rs, PlanOptions{})
		if !p.Exact {
			t.Fatalf("trial %d: not exact", trial)
		}
		moves := 0
		for _, mv := range p.Moves {
			_ = mv
			moves++
		}
		moveCost := DefaultMoveCost
		if n > 2 {
			moveCost /= math.Sqrt(float64(n - 1))
		}
		got := p.CVAfter + moveCost*float64(moves)
		if len(p.Moves) == 0 {
			got = p.CVBefore
		}
		want := bruteCost(base, w, rates, start, moveCost, true)
		if got > want+1e-9 {
			t.Fatalf("trial %d: cost %v (CV %v, %d moves), brute force %v", trial, got, p.CVAfter, moves, want)
		}
	}
}

func TestOptimalAssignment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rates   []float64
		weights []float64
		want    float64
	}{
		{"the TAO paper demo", []float64{100, 100, 100, 100, 50, 50, 50, 50}, []float64{1, 1, 1, 1}, 0},
		{"10 and 11 over two", []float64{10, 11}, []float64{1, 1}, 0.5 / 10.5},
		{"fewer clients than replicas", []float64{100}, []float64{1, 1}, 1},
		{"weights", []float64{100, 100, 100, 50, 50, 50, 50}, []float64{2, 1, 1}, 0.2},
		{"no clients", nil, []float64{1, 1}, 0},
		{"three 50s and a 100 over two", []float64{50, 50, 50, 100}, []float64{1, 1}, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assign, spread := OptimalAssignment(tt.rates, tt.weights)
			if math.Abs(spread-tt.want) > 1e-9 {
				t.Errorf("spread = %v, want %v", spread, tt.want)
			}
			loads := make([]float64, len(tt.weights))
			for i, j := range assign {
				loads[j] += tt.rates[i]
			}
			if got := Spread(loads, tt.weights); math.Abs(got-spread) > 1e-9 {
				t.Errorf("assignment %v has spread %v, reported %v", assign, got, spread)
			}
		})
	}
}

func TestOptimalAssignmentMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 2 + rng.IntN(3)
		m := 1 + rng.IntN(8)
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(1 + rng.IntN(3))
		}
		rates := make([]float64, m)
		for k := range rates {
			rates[k] = float64(1 + rng.IntN(100))
		}
		_, got := OptimalAssignment(rates, w)
		want := bruteCost(make([]float64, n), w, rates, nil, 0, false)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d: rates %v weights %v: spread %v, brute force %v", trial, rates, w, got, want)
		}
	}
}

// TestPlanMovesLargeGreedy checks the stated bound of the greedy search on
// an instance too large for the exact one: with equal weights the most
// loaded replica is within the largest client of the least loaded.
func TestPlanMovesLargeGreedy(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	const n, perReplica = 40, 50
	rs := make([]PlanReplica, n)
	maxRate := 0.0
	for i := range rs {
		rs[i] = PlanReplica{ID: fmt.Sprint("r", i), Weight: 1}
		if i%4 != 0 { // three quarters of the replicas start empty
			continue
		}
		for k := range perReplica {
			x := float64(1 + rng.IntN(100))
			maxRate = max(maxRate, x)
			rs[i].Clients = append(rs[i].Clients, protocol.ClientRate{ID: fmt.Sprintf("c%d-%d", i, k), Rate: x})
			rs[i].Load += x
		}
	}
	p := PlanMoves(rs, PlanOptions{MinImprovement: 0.05})
	if p.Exact {
		t.Errorf("exact on %d clients", n/4*perReplica)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range p.Loads {
		lo, hi = min(lo, l), max(hi, l)
	}
	if hi-lo > maxRate {
		t.Errorf("max - min = %v, more than the largest client %v", hi-lo, maxRate)
	}
	if p.After >= p.Before || len(p.Moves) == 0 {
		t.Errorf("no improvement: before %v after %v", p.Before, p.After)
	}
}

func TestSpreadAndCV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		loads, weights []float64
		spread, cv     float64
	}{
		{"balanced", []float64{150, 150, 150, 150}, nil, 0, 0},
		{"demo imbalance", []float64{400, 200, 0, 0}, nil, 250.0 / 150, math.Sqrt((250*250+50*50+150*150*2)/4.0) / 150},
		{"weighted balanced", []float64{200, 100}, []float64{2, 1}, 0, 0},
		{"idle", []float64{0, 0}, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Spread(tt.loads, tt.weights); math.Abs(got-tt.spread) > 1e-9 {
				t.Errorf("Spread = %v, want %v", got, tt.spread)
			}
			if got := CV(tt.loads, tt.weights); math.Abs(got-tt.cv) > 1e-9 {
				t.Errorf("CV = %v, want %v", got, tt.cv)
			}
		})
	}
}

func BenchmarkPlanMovesDemo(b *testing.B) {
	rs := []PlanReplica{
		planReplica("a", clients("h1", 100, "h2", 100, "h3", 100, "h4", 100)),
		planReplica("b", clients("l1", 50, "l2", 50, "l3", 50, "l4", 50)),
		planReplica("c", nil),
		planReplica("d", nil),
	}
	for b.Loop() {
		PlanMoves(rs, PlanOptions{MinImprovement: 0.05})
	}
}

func BenchmarkPlanMovesSizes(b *testing.B) {
	for _, size := range []struct{ replicas, clients int }{{8, 30}, {16, 64}, {40, 2000}, {200, 20000}} {
		b.Run(fmt.Sprintf("%dx%d", size.replicas, size.clients), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(7, 8))
			rs := make([]PlanReplica, size.replicas)
			for i := range rs {
				rs[i] = PlanReplica{ID: fmt.Sprint("r", i), Weight: 1}
			}
			for k := range size.clients {
				i := rng.IntN(size.replicas/2 + 1)
				x := float64(1 + rng.IntN(100))
				rs[i].Clients = append(rs[i].Clients, protocol.ClientRate{ID: fmt.Sprint("c", k), Rate: x})
				rs[i].Load += x
			}
			for b.Loop() {
				PlanMoves(rs, PlanOptions{MinImprovement: 0.05})
			}
		})
	}
}

// One client much busier than the rest pins the spread: whatever the plan,
// its replica is the largest deviation. Ranking by CV still balances the
// others (a planner ranking by spread returned no plan here).
func TestPlanMovesDominantClient(t *testing.T) {
	t.Parallel()
	rs := []PlanReplica{
		planReplica("a", clients("big", 300)),
		planReplica("b", clients("c1", 50, "c2", 50, "c3", 50, "c4", 50, "c5", 50)),
		planReplica("c", clients("c6", 50, "c7", 50)),
		planReplica("d", clients("c8", 50)),
	}
	p := PlanMoves(rs, PlanOptions{MinImprovement: 0.05})
	if len(p.Moves) != 2 {
		t.Fatalf("moves = %+v, want two clients of 50 moved from b", p.Moves)
	}
	for _, mv := range p.Moves {
		if mv.From != "b" || mv.To == "a" {
			t.Errorf("move %+v: want a client of b moved to c or d", mv)
		}
	}
	loads := slices.Clone(p.Loads)
	slices.Sort(loads)
	if want := []float64{100, 150, 150, 300}; !slices.Equal(loads, want) {
		t.Errorf("loads after = %v, want %v in some order", p.Loads, want)
	}
	if math.Abs(p.After-p.Before) > 1e-9 {
		t.Errorf("spread %v -> %v: the big client pins it", p.Before, p.After)
	}
	if !(p.CVAfter < p.CVBefore-0.1) {
		t.Errorf("CV %v -> %v, want a large drop", p.CVBefore, p.CVAfter)
	}
	// At the best reachable balance nothing moves.
	again := PlanMoves([]PlanReplica{
		planReplica("a", clients("big", 300)),
		planReplica("b", clients("c1", 50, "c2", 50, "c3", 50)),
		planReplica("c", clients("c6", 50, "c7", 50, "c4", 50)),
		planReplica("d", clients("c8", 50, "c5", 50)),
	}, PlanOptions{MinImprovement: 0.05})
	if len(again.Moves) != 0 {
		t.Errorf("at the optimum: moves %+v, want none", again.Moves)
	}
}
