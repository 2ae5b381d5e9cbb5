package effectiveness

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

func TestAnalyse(t *testing.T) {
	t.Parallel()
	bal := []float64{150, 150, 150, 150}
	rr := []float64{200, 100, 200, 100}
	tests := []struct {
		name                string
		served              [][]float64
		rebinds             []int
		wantEq, wantFrom    int
		wantCV, wantRebinds float64
		wantRates           []float64
	}{
		{
			name:   "round-robin never balances",
			served: [][]float64{rr, rr, rr, rr, rr, rr, rr, rr},
			// Steady window: the last half, seconds 4–7.
			rebinds: []int{0, 0, 0, 0, 0, 0, 0, 0},
			wantEq:  -1, wantFrom: 4, wantCV: 1.0 / 3, wantRates: rr,
		},
		{
			name:    "balances at second 2",
			served:  [][]float64{rr, {300, 0, 150, 150}, bal, bal, {140, 160, 150, 150}, bal, bal, bal},
			rebinds: []int{3, 2, 1, 0, 0, 1, 0, 0},
			wantEq:  2, wantFrom: 2, wantCV: math.Sqrt(2*(10.0/6)*(10.0/6)/4) / 150, wantRebinds: 2.0 / 6,
			wantRates: []float64{(5*150 + 140) / 6.0, (5*150 + 160) / 6.0, 150, 150},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := analyseTrace(effTrace{Replicas: []string{"a", "b", "c", "d"}, Served: tt.served, Rebinds: tt.rebinds, Failed: make([]int, len(tt.served))}, 0.10, 5)
			if f.Equilibrium != tt.wantEq || f.SteadyFrom != tt.wantFrom {
				t.Errorf("equilibrium %d from %d, want %d from %d", f.Equilibrium, f.SteadyFrom, tt.wantEq, tt.wantFrom)
			}
			if math.Abs(f.SteadyCV-tt.wantCV) > 1e-9 || math.Abs(f.RebindsPerS-tt.wantRebinds) > 1e-9 {
				t.Errorf("steady CV %v rebinds/s %v, want %v and %v", f.SteadyCV, f.RebindsPerS, tt.wantCV, tt.wantRebinds)
			}
			for i := range tt.wantRates {
				if math.Abs(f.ReplicaRates[i]-tt.wantRates[i]) > 1e-9 {
					t.Errorf("replica rates %v, want %v", f.ReplicaRates, tt.wantRates)
					break
				}
			}
		})
	}
	// An empty trace (a run too short for a whole second) is all zero.
	f := analyseTrace(effTrace{Replicas: []string{"a"}}, 0.10, 5)
	if f.Equilibrium != -1 || f.SteadyCV != 0 || f.RebindsPerS != 0 {
		t.Errorf("empty trace: %+v", f)
	}
}

func TestOptimalCV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rates    []float64
		replicas int
		want     float64
	}{
		{"the TAO paper mix on 4", []float64{100, 100, 100, 100, 50, 50, 50, 50}, 4, 0},
		{"the TAO paper mix on 3", []float64{100, 100, 100, 100, 50, 50, 50, 50}, 3, 0},
		// 600 over 5: best is 100,100,100,150,150 → mean 120, sd √(3·400+2·900)/√5.
		{"the TAO paper mix on 5", []float64{100, 100, 100, 100, 50, 50, 50, 50}, 5, math.Sqrt((3*400+2*900)/5.0) / 120},
		{"one client per replica", []float64{100, 50}, 2, 1.0 / 3},
		{"more replicas than clients", []float64{60, 60}, 3, math.Sqrt((2*400+1600)/3.0) / 40},
		{"none", nil, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, exact := optimalCV(tt.rates, tt.replicas)
			if math.Abs(got-tt.want) > 1e-9 || !exact {
				t.Errorf("optimalCV = %v (exact %v), want %v", got, exact, tt.want)
			}
		})
	}
}

func TestOptimalCVMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := 0; trial < 200; trial++ {
		replicas := 2 + rng.IntN(4)
		rates := make([]float64, 1+rng.IntN(8))
		for i := range rates {
			rates[i] = float64(10 + rng.IntN(150))
		}
		got, _ := optimalCV(rates, replicas)
		want := bruteForceCV(rates, replicas)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("optimalCV(%v, %d) = %v, brute force %v", rates, replicas, got, want)
		}
	}
}

func bruteForceCV(rates []float64, replicas int) float64 {
	best := math.Inf(1)
	assign := make([]int, len(rates))
	for {
		loads := make([]float64, replicas)
		for c, r := range assign {
			loads[r] += rates[c]
		}
		best = min(best, stats.CV(loads))
		i := 0
		for ; i < len(assign); i++ {
			assign[i]++
			if assign[i] < replicas {
				break
			}
			assign[i] = 0
		}
		if i == len(assign) {
			return best
		}
	}
}

func TestWaterFilledSquares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		loads []float64
		rest  float64
		want  float64
	}{
		{[]float64{0, 0, 0}, 30, 300},           // 10,10,10
		{[]float64{100, 0, 0}, 30, 10000 + 450}, // 100,15,15
		{[]float64{10, 20, 30}, 0, 1400},
		{[]float64{10, 20, 30}, 60, 3 * 40 * 40},
	}
	for _, tt := range tests {
		if got := waterFilledSquares(slices.Clone(tt.loads), tt.rest); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("waterFilledSquares(%v, %v) = %v, want %v", tt.loads, tt.rest, got, tt.want)
		}
	}
}
