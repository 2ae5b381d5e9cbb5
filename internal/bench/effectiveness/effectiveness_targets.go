package effectiveness

import (
	"fmt"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The targets for the effectiveness experiment.
const (
	// effEqWithin: the adaptive strategies reach equilibrium within 10 s.
	effEqWithin = 10
	// effCVTarget: steady CV at most 5%, or effCVSlack above optimal_cv
	// where the mix cannot do better.
	effCVTarget = 0.05
	effCVSlack  = 0.02
	// effRebindsNearZero: "no oscillation" is at most one binding change
	// every ten seconds over the steady window.
	effRebindsNearZero = 0.1
)

// effMix is what the client mix allows, whatever the strategy.
type effMix struct {
	rates []float64 // in start order
	// optimalCV and bestSpread are the best any assignment reaches.
	optimalCV    float64
	optimalExact bool
	bestSpread   float64
	// band is the equilibrium band the targets use: ±10%, or the best
	// spread plus two points when ±10% is out of reach.
	band float64
	// rrRates are the loads of round-robin's assignment (client i on
	// replica i mod n) and rrCV their CV.
	rrRates []float64
	rrCV    float64
}

func newEffMix(order []float64, replicas int) effMix {
	m := effMix{rates: order, band: stats.DefaultBand}
	m.optimalCV, m.optimalExact = optimalCV(order, replicas)
	weights := make([]float64, replicas)
	for i := range weights {
		weights[i] = 1
	}
	_, m.bestSpread = strategy.OptimalAssignment(order, weights)
	if m.bestSpread > m.band {
		m.band = m.bestSpread + 0.02
	}
	m.rrRates = make([]float64, replicas)
	for i, r := range order {
		m.rrRates[i%replicas] += r
	}
	m.rrCV = stats.CV(m.rrRates)
	return m
}

func (m effMix) settings(replicas int, dur time.Duration) map[string]any {
	return map[string]any{
		"replicas": replicas, "rates": m.rates, "duration_s": int(dur / time.Second),
		"band": stats.DefaultBand, "window_s": stats.DefaultWindow,
		"optimal_cv": m.optimalCV, "best_spread": m.bestSpread, "target_band": m.band,
		"round_robin_rates": m.rrRates, "round_robin_cv": m.rrCV,
	}
}

// adaptive reports whether the targets of the adaptive strategies apply.
func (r effRun) adaptive() bool {
	return r.Binding == protocol.OnDemand && (r.Strategy == strategy.LeastLoadedName || r.Strategy == strategy.MinimumDispersionName)
}

func (r effRun) roundRobinPerSession() bool {
	return r.Strategy == strategy.RoundRobinName && r.Binding == protocol.PerSession
}

// row computes a run's results row and verdict.
func (m effMix) row(r effRun, tr effTrace, rec *stats.Recorder, dur time.Duration, size bench.Size) EffRow {
	f := analyseTrace(tr, stats.DefaultBand, stats.DefaultWindow)
	row := EffRow{
		Name: r.String(), Strategy: r.Strategy, Binding: r.Binding,
		Replicas: tr.Replicas, DurationS: len(tr.Served),
		SteadyFromS: f.SteadyFrom, SteadyCV: f.SteadyCV, ReplicaRates: f.ReplicaRates,
		OptimalCV: m.optimalCV, OptimalExact: m.optimalExact, BestSpread: m.bestSpread, TargetBand: m.band,
		RebindsPerS: f.RebindsPerS,
		Figures:     bench.Figures{Summary: rec.Summary(), Errors: int64(f.Failed)},
	}
	if dur > 0 {
		row.ThroughputRPS = float64(rec.Count()) / dur.Seconds()
	}
	row.EquilibriumS = nilIfNegative(f.Equilibrium)
	row.TargetEquilibriumS = row.EquilibriumS
	if m.band != stats.DefaultBand {
		row.TargetEquilibriumS = nilIfNegative(stats.FindEquilibrium(tr.Served, m.band, stats.DefaultWindow))
	}
	row.Target, row.TargetDetail = m.judge(r, row, size)
	return row
}

func nilIfNegative(s int) *int {
	if s < 0 {
		return nil
	}
	return &s
}

// judge says whether a run met the target for its pair.
func (m effMix) judge(r effRun, row EffRow, size bench.Size) (status, detail string) {
	// A verdict needs an equilibrium window and a steady window after
	// the 10 s deadline.
	if row.DurationS < 2*effEqWithin {
		if r.adaptive() || r.roundRobinPerSession() {
			return "not judged", fmt.Sprintf("a %d s run is too short to judge (%s size); the targets need at least %d s", row.DurationS, size, 2*effEqWithin)
		}
		return "no target", "figures only"
	}
	switch {
	case r.adaptive():
		var why []string
		ok := true
		check := func(pass bool, format string, args ...any) {
			mark := "✓"
			if !pass {
				mark, ok = "✗", false
			}
			why = append(why, mark+" "+fmt.Sprintf(format, args...))
		}
		eq := row.TargetEquilibriumS
		bandNote := ""
		if m.band != stats.DefaultBand {
			bandNote = fmt.Sprintf(" (±%.0f%%: the mix cannot do ±10%%)", m.band*100)
		}
		check(eq != nil && *eq <= effEqWithin, "equilibrium %s ≤ %d s%s", fmtEq(eq), effEqWithin, bandNote)
		check(row.SteadyCV <= effCVTarget || row.SteadyCV <= m.optimalCV+effCVSlack,
			"steady CV %.3f ≤ %.2f or ≤ optimal %.3f + %.2f", row.SteadyCV, effCVTarget, m.optimalCV, effCVSlack)
		check(row.RebindsPerS <= effRebindsNearZero, "rebinds %.2f/s after equilibrium ≤ %.1f/s", row.RebindsPerS, effRebindsNearZero)
		return verdict(ok), strings.Join(why, "; ")
	case r.roundRobinPerSession():
		// fulcrum's round-robin starts every new picker at a random
		// replica, and load reports rebuild the picker, so its bindings
		// need not be a strict rotation: the target is imbalance, not a
		// particular assignment.
		ok := row.EquilibriumS == nil && row.SteadyCV >= stats.DefaultBand
		return verdict(ok), fmt.Sprintf("stays imbalanced: equilibrium %s, steady CV %.3f ≥ %.2f (a strict rotation of the clients gives %s, CV %.3f)",
			fmtEq(row.EquilibriumS), row.SteadyCV, stats.DefaultBand, joinRates(m.rrRates), m.rrCV)
	}
	return "no target", "figures only"
}

func verdict(ok bool) string {
	if ok {
		return string(bench.Met)
	}
	return string(bench.Missed)
}
