package effectiveness

import (
	"math"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

func TestEffMix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		rates      []float64
		replicas   int
		wantBand   float64
		wantRRCV   float64
		wantRRRate []float64
	}{
		// Interleaved default: a strict rotation gives Fig. 15's 200/100/200/100.
		{"the TAO paper", []float64{100, 50, 100, 50, 100, 50, 100, 50}, 4, 0.10, 1.0 / 3, []float64{200, 100, 200, 100}},
		// 600 over 5 replicas: the best spread is ±25%, so equilibrium is
		// judged within ±27%.
		{"five replicas", []float64{100, 50, 100, 50, 100, 50, 100, 50}, 5, 0.27, 1.0 / 3, []float64{150, 150, 150, 50, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newEffMix(tt.rates, tt.replicas)
			if math.Abs(m.band-tt.wantBand) > 1e-9 || math.Abs(m.rrCV-tt.wantRRCV) > 1e-9 {
				t.Errorf("band %v rrCV %v, want %v and %v", m.band, m.rrCV, tt.wantBand, tt.wantRRCV)
			}
			for i := range tt.wantRRRate {
				if m.rrRates[i] != tt.wantRRRate[i] {
					t.Errorf("round-robin rates %v, want %v", m.rrRates, tt.wantRRRate)
					break
				}
			}
		})
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	four := []float64{100, 50, 100, 50, 100, 50, 100, 50}
	eq := func(s int) *int { return &s }
	ll := effRun{Strategy: "least-loaded", Binding: "on-demand"}
	md := effRun{Strategy: "minimum-dispersion", Binding: "on-demand"}
	rr := effRun{Strategy: "round-robin", Binding: "per-session"}
	p2 := effRun{Strategy: "power-of-two", Binding: "per-request"}
	tests := []struct {
		name       string
		run        effRun
		row        EffRow
		replicas   int
		wantStatus string
		wantDetail string
	}{
		{"adaptive met", ll, EffRow{DurationS: 60, EquilibriumS: eq(3), TargetEquilibriumS: eq(3), SteadyCV: 0.01}, 4, "met", "✓ equilibrium 3 s"},
		{"adaptive late", md, EffRow{DurationS: 60, EquilibriumS: eq(12), TargetEquilibriumS: eq(12), SteadyCV: 0.01}, 4, "missed", "✗ equilibrium 12 s"},
		{"adaptive never", ll, EffRow{DurationS: 60, SteadyCV: 0.2}, 4, "missed", "✗ steady CV 0.200"},
		{"adaptive oscillates", md, EffRow{DurationS: 60, EquilibriumS: eq(3), TargetEquilibriumS: eq(3), SteadyCV: 0.03, RebindsPerS: 0.5}, 4, "missed", "✗ rebinds 0.50/s"},
		// Five replicas cannot do better than CV 0.2: within 0.02 of it
		// is met, and equilibrium is judged in the widened band.
		{"quantised mix", ll, EffRow{DurationS: 60, TargetEquilibriumS: eq(4), SteadyCV: 0.21}, 5, "met", "±27%"},
		{"round-robin imbalanced", rr, EffRow{DurationS: 60, SteadyCV: 0.33}, 4, "met", "stays imbalanced"},
		{"round-robin balanced by luck", rr, EffRow{DurationS: 60, EquilibriumS: eq(0), SteadyCV: 0.02}, 4, "missed", "equilibrium 0 s"},
		{"no target", p2, EffRow{DurationS: 60}, 4, "no target", "figures only"},
		{"too short", ll, EffRow{DurationS: 3}, 4, "not judged", "too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, detail := newEffMix(four, tt.replicas).judge(tt.run, tt.row, bench.Full)
			if status != tt.wantStatus || !strings.Contains(detail, tt.wantDetail) {
				t.Errorf("judge = %q, %q; want %q and a detail with %q", status, detail, tt.wantStatus, tt.wantDetail)
			}
		})
	}
}
