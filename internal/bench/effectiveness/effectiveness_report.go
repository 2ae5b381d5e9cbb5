package effectiveness

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// effReport writes the effectiveness report: the targets, the settings,
// one table of all runs and each run's plot.
func effReport(rows []EffRow, m effMix, replicas int, dur time.Duration, size bench.Size) *bench.Report {
	rep := bench.NewReport("fulcrum bench effectiveness")
	for _, row := range rows {
		name := row.Name
		switch row.Target {
		case string(bench.Met):
			rep.Target(name, true, "%s", row.TargetDetail)
		case string(bench.Missed):
			rep.Target(name, false, "%s", row.TargetDetail)
		case "not judged":
			rep.TargetUnknown(name, "%s", row.TargetDetail)
		}
	}
	rep.Heading("Set-up")
	rep.Para("%d replicas of the prime service, each run on a fresh balancer (report interval 500 ms); %d open-loop clients at %s calls/s, "+
		"started %s apart in that order; %s per run (%s size). Rates are counted per second from the first client's start by the replica "+
		"named in each answer. Equilibrium: the first %d s window with every replica within ±%.0f%% of the second's mean. "+
		"Steady window: from equilibrium to the end, the last half of the run if none.",
		replicas, len(m.rates), joinRates(m.rates), effClientGap, dur, size, stats.DefaultWindow, stats.DefaultBand*100)
	exact := "proven by exhaustive search"
	if !m.optimalExact {
		exact = "the best assignment found, not proven optimal"
	}
	rep.Para("Clients are bound whole, so the best reachable balance is quantised: the lowest CV of any assignment of these clients "+
		"is %.4f (%s), the least spread ±%.1f%%. Round-robin's assignment (client i on replica i mod %d) gives %s calls/s, CV %.3f.",
		m.optimalCV, exact, m.bestSpread*100, replicas, joinRates(m.rrRates), m.rrCV)
	rep.Para("fulcrum's round-robin starts each new picker at a random replica (as grpc-go's does) and load reports rebuild the picker, " +
		"so per-session bindings are not a strict rotation: its target is only that the loads stay imbalanced. " +
		"Latencies count from each call's intended send time (open loop, no coordinated omission) and so include the load generator's " +
		"own send lag, shown beside them.")
	if m.band != stats.DefaultBand {
		rep.Para("No assignment keeps every replica within ±10%% of the mean, so the targets use ±%.0f%% for equilibrium (target_equilibrium_s).", m.band*100)
	}
	rep.Heading("Results")
	header := []string{"strategy/binding", "equilibrium", "steady CV", "optimal CV", "rebinds/s", "replica rates (calls/s)",
		"calls", "errors", "p50 µs", "p99 µs", "max µs", "send lag p50/p99 µs", "target"}
	var table [][]string
	for _, row := range rows {
		eq := fmtEq(row.EquilibriumS)
		if m.band != stats.DefaultBand {
			eq += fmt.Sprintf(" (±%.0f%%: %s)", m.band*100, fmtEq(row.TargetEquilibriumS))
		}
		table = append(table, []string{
			row.Name, eq, bench.Num(row.SteadyCV, 4), bench.Num(row.OptimalCV, 4), bench.Num(row.RebindsPerS, 2), joinRates(row.ReplicaRates),
			fmt.Sprint(row.Count), fmt.Sprint(row.Errors), bench.Num(row.P50, 0), bench.Num(row.P99, 0), bench.Num(row.Max, 0),
			bench.Num(row.SendLagP50, 0) + "/" + bench.Num(row.SendLagP99, 0), row.Target,
		})
	}
	rep.Table(header, table)
	rep.Para("Per-second rates of each run are in rates-STRATEGY-BINDING.csv; the plots below are Fig. 15/16 of Othman et al. (2001) for each run.")
	for _, row := range rows {
		slug := effRun{Strategy: row.Strategy, Binding: row.Binding}.slug()
		rep.Heading(row.Name)
		rep.Para("%s — %s", row.Target, row.TargetDetail)
		rep.Image(row.Name, "rates-"+slug+".png")
	}
	return rep
}
