package effectiveness

import (
	"math"
	"slices"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// effTrace is what one effectiveness run saw, second by second from the
// start of the first client: calls served by each replica (counted by the
// served_by of the answers, in the second each call was meant to be
// sent), failed calls and client-side binding changes. Only whole seconds
// are kept.
type effTrace struct {
	// Replicas are the replica ids, in registration order.
	Replicas []string
	// Served[t][i] is the number of calls replica i answered in second t.
	Served [][]float64
	// Failed[t] and Rebinds[t] count failed calls and binding changes in
	// second t.
	Failed, Rebinds []int
}

// effFigures are an effectiveness run's results, computed from its trace.
type effFigures struct {
	// Equilibrium is the first second of the first window of window
	// seconds with every replica within band of the mean; -1 if none.
	Equilibrium int
	// SteadyFrom is the first second of the steady window: Equilibrium,
	// or the middle of the run when there was none. The window runs to
	// the end of the trace.
	SteadyFrom int
	// ReplicaRates are the replicas' mean served rates over the steady
	// window, in replica order; SteadyCV is their coefficient of
	// variation.
	ReplicaRates []float64
	SteadyCV     float64
	// RebindsPerS is the clients' binding changes per second over the
	// steady window.
	RebindsPerS float64
	// Failed is the total of failed calls.
	Failed int
}

// analyseTrace computes a run's figures (pure). The effectiveness experiment's
// definitions (issue 3): equilibrium is the start of the first window
// seconds in which every replica stays within band of that second's mean;
// steady_cv is the population standard deviation over the mean of the
// per-replica mean rates from equilibrium to the end (the last half of the
// run if equilibrium never came); rebinds per second are counted over the
// same steady window.
func analyseTrace(tr effTrace, band float64, window int) effFigures {
	f := effFigures{Equilibrium: stats.FindEquilibrium(tr.Served, band, window)}
	f.SteadyFrom = f.Equilibrium
	if f.SteadyFrom < 0 {
		f.SteadyFrom = len(tr.Served) / 2
	}
	steady := tr.Served[f.SteadyFrom:]
	f.ReplicaRates = make([]float64, len(tr.Replicas))
	if len(steady) > 0 {
		for _, sec := range steady {
			for i := range f.ReplicaRates {
				if i < len(sec) {
					f.ReplicaRates[i] += sec[i]
				}
			}
		}
		for i := range f.ReplicaRates {
			f.ReplicaRates[i] /= float64(len(steady))
		}
		rebinds := 0
		for _, n := range tr.Rebinds[min(f.SteadyFrom, len(tr.Rebinds)):] {
			rebinds += n
		}
		f.RebindsPerS = float64(rebinds) / float64(len(steady))
	}
	f.SteadyCV = stats.CV(f.ReplicaRates)
	for _, n := range tr.Failed {
		f.Failed += n
	}
	return f
}

// exactCVClients is the most clients optimalCV searches exhaustively
// (with pruning) for the lowest coefficient of variation.
const exactCVClients = 14

// optimalCV is the lowest coefficient of variation of the replicas' loads
// that any assignment of whole clients with the given rates to replicas
// of equal capacity can reach — the physical limit of the experiment: a
// client is bound whole to one replica. It is the better of the
// assignment strategy.OptimalAssignment finds (the least largest
// deviation from the mean, exact up to 64 clients) and, up to
// exactCVClients clients, an exact branch and bound on the sum of squared
// loads; exact reports whether the result is proven optimal.
func optimalCV(rates []float64, replicas int) (cv float64, exact bool) {
	if replicas <= 0 || len(rates) == 0 {
		return 0, true
	}
	weights := make([]float64, replicas)
	for i := range weights {
		weights[i] = 1
	}
	assign, _ := strategy.OptimalAssignment(rates, weights)
	loads := make([]float64, replicas)
	for c, r := range assign {
		if r >= 0 {
			loads[r] += rates[c]
		}
	}
	cv = stats.CV(loads)
	if len(rates) > exactCVClients {
		return cv, false
	}
	if best, ok := minSquaresCV(rates, replicas, cv); ok {
		cv = min(cv, best)
	}
	return cv, true
}

// minSquaresCV searches the assignments of clients to replicas for the
// least sum of squared loads, which, the total being fixed, is the least
// CV. Clients go largest first; a client only opens the first empty
// replica (replicas are interchangeable); a branch is cut when even
// spreading the remaining load as water over the replicas cannot beat the
// best so far. bound is a CV known to be reachable. ok is false when the
// rates are not usable (total not positive).
func minSquaresCV(rates []float64, replicas int, bound float64) (float64, bool) {
	rs := slices.Clone(rates)
	for i, r := range rs {
		if !(r > 0) || math.IsInf(r, 0) {
			rs[i] = 0
		}
	}
	slices.SortFunc(rs, func(a, b float64) int { return -cmpFloat(a, b) })
	total := 0.0
	for _, r := range rs {
		total += r
	}
	if !(total > 0) {
		return 0, false
	}
	mean := total / float64(replicas)
	// CV = sqrt(Σ(L−m)²/n)/m, so Σ L² = n·m²·(1+CV²).
	best := float64(replicas)*mean*mean*(1+bound*bound) + 1e-9*total*total
	remaining := make([]float64, len(rs)+1)
	for i := len(rs) - 1; i >= 0; i-- {
		remaining[i] = remaining[i+1] + rs[i]
	}
	loads := make([]float64, replicas)
	var dfs func(k, used int, sq float64)
	dfs = func(k, used int, sq float64) {
		if k == len(rs) {
			best = min(best, sq)
			return
		}
		if waterFilledSquares(loads, remaining[k]) >= best {
			return
		}
		for i := 0; i < min(used+1, replicas); i++ {
			l := loads[i]
			loads[i] = l + rs[k]
			dfs(k+1, max(used, i+1), sq-l*l+loads[i]*loads[i])
			loads[i] = l
		}
	}
	sq := 0.0
	dfs(0, 0, sq)
	cv := math.Sqrt(max(0, best/(float64(replicas)*mean*mean)-1))
	return cv, true
}

// waterFilledSquares is the least Σ L² reachable by adding rest to loads
// in any (fractional) amounts: fill the lowest loads up to a common level.
func waterFilledSquares(loads []float64, rest float64) float64 {
	s := slices.Clone(loads)
	slices.Sort(s)
	// Find the level h with Σ max(0, h − s_i) = rest.
	k, sum := 0, 0.0
	for k < len(s) {
		sum += s[k]
		k++
		h := (sum + rest) / float64(k)
		if k == len(s) || h <= s[k] {
			sq := float64(k) * h * h
			for _, l := range s[k:] {
				sq += l * l
			}
			return sq
		}
	}
	return 0 // not reached: the loop returns at k == len(s)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
