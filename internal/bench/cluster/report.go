package cluster

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// Targets of issue 23's benchmark.
const (
	propagationTargetMS = 1000
	etcdWritesTarget    = 50 // per second, steady state
	// rateIndependence is how far apart etcd's writes per second may be
	// at two report rates (one twice the other) and still count as
	// independent of the rate.
	rateIndependence = 5
)

// clusterReport is report.md.
func clusterReport(s settings, prop Propagation, rows []OverheadRow, control *OverheadRow, eff []EffRun, fan FanIn, leader LeaderFailover, fail InstanceFailover) *bench.Report {
	rep := bench.NewReport("fulcrum bench cluster")
	ttl2 := 2 * sessionTTL

	rep.Target("propagation p99 ≤ 1 s", prop.P99MS <= propagationTargetMS,
		"registration's 201 at one instance → active in another's GET: p50 %.2f ms, p99 %.2f ms over %d", prop.P50MS, prop.P99MS, prop.Registrations)
	if leader.Measured {
		rep.Target("leader failover ≤ 2 × session_ttl", leader.NewTerm > 0 && leader.NewTermAdvisoryMS <= float64(ttl2.Milliseconds()),
			"kill -9 of the leader → first advisory with a higher term: %.0f ms (2 × session_ttl = %s; term %d → %d)", leader.NewTermAdvisoryMS, ttl2, leader.OldTerm, leader.NewTerm)
	} else {
		rep.TargetUnknown("leader failover ≤ 2 × session_ttl", "%s", leader.Reason)
	}
	rep.Target("instance failover ≤ 2 × session_ttl", fail.FirstSuccessMaxMS <= float64(ttl2.Milliseconds()),
		"kill -9 of an instance → each per-request client's first successful call through another: p50 %.1f ms, max %.1f ms (2 × session_ttl = %s)", fail.FirstSuccessP50MS, fail.FirstSuccessMaxMS, ttl2)
	rep.Target("zero failed calls for bound on-demand clients when an instance dies", fail.OnDemandFailed == 0,
		"%d of %d calls of %d bound clients failed", fail.OnDemandFailed, fail.OnDemandCalls, fail.Clients)
	var most, least float64 = 0, math.Inf(1)
	for _, w := range fan.Windows {
		most, least = max(most, w.EtcdWritesPerSecond), min(least, w.EtcdWritesPerSecond)
	}
	if len(fan.Windows) > 0 {
		rep.Target(fmt.Sprintf("etcd writes ≤ %d/s with %d reporting replicas", etcdWritesTarget, fan.Replicas), most <= etcdWritesTarget,
			"at most %.1f committed proposals/s over the windows", most)
		rep.Target("etcd writes independent of the report rate", most-least <= rateIndependence,
			"%.1f to %.1f writes/s while the report rate doubles (≤ %d/s apart counts as independent)", least, most, rateIndependence)
	}
	var three *OverheadRow
	for i := range rows {
		if rows[i].Name == cfgThree {
			three = &rows[i]
		}
	}
	if three != nil && three.ThroughputRatio != nil && control != nil && control.ThroughputRatioBounds != nil {
		rep.Target("overhead with three instances within the A/A control's noise of one", *three.ThroughputRatio >= control.ThroughputRatioBounds.Lower,
			"throughput three/one %.3f (median per-round ratio); the control, one instance again on another process, %.3f with per-round ratios' p5 %.3f",
			*three.ThroughputRatio, *control.ThroughputRatio, control.ThroughputRatioBounds.Lower)
	}
	switch st, detail := effTarget(eff); st {
	case bench.Unknown:
		rep.TargetUnknown("equilibrium ≤ 10 s with three instances", "%s", detail)
	default:
		rep.Target("equilibrium ≤ 10 s with three instances", st == bench.Met, "%s", detail)
	}

	rep.Heading("Set-up")
	rep.Para("Three `fulcrum serve` instances (admin APIs on 127.0.0.1, 127.0.0.2 and 127.0.0.3, one admin_token, `session_ttl: %s`) on a three-member etcd cluster started by the bench on loopback, everything on this machine. Groups are created through A's API with `front_door: 0.0.0.0:0`, so every instance binds a port of its own; calls reach instance N at 127.0.0.N.", sessionTTL)

	rep.Heading("Propagation")
	rep.Para("%d registrations, each `POST /v1/groups/{name}/replicas` at one instance (A, B, C in turn), timed from its 201 to the replica `active` in the next instance's `GET` (polled without pause): p50 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms.",
		prop.Registrations, prop.P50MS, prop.P99MS, prop.MaxMS, prop.MeanMS)

	rep.Heading("Overhead: per-request through three instances against one")
	rep.Para("%d closed-loop callers of `GET /prime/%d` through a per-request group of two replicas (round-robin): all at A's front door (one-instance), two at each instance's (three-instances), and all at B's (the A/A control: one instance again, on another process). %d calls per configuration in %d interleaved rounds.",
		overheadCallers, bench.PrimeN, s.Calls, s.Rounds)
	table := [][]string{}
	for _, r := range append(append([]OverheadRow(nil), rows...), deref(control)...) {
		table = append(table, []string{r.Name, bench.Num(r.ThroughputRPS, 0), bench.Num(r.Mean, 0), bench.Num(r.P50, 0), bench.Num(r.P99, 0),
			strconv.FormatInt(r.Errors, 10), ratioCell(r.ThroughputRatio), ratioCell(r.LatencyRatio), usCell(r.InstanceCPUUS)})
	}
	rep.Table([]string{"configuration", "calls/s", "mean µs", "p50 µs", "p99 µs", "errors", "throughput / one", "latency / one", "instances' CPU µs/call"}, table)

	effSection(rep, s, eff)

	rep.Heading("Fan-in")
	rep.Para("%d simulated replicas in %d per-request groups, replica i registered at and reporting to instance i mod 3 (`POST /v1/report` with its token; a 307 is followed, and later reports go there until one fails, as monitors do), loads a random walk in [0, 1] (normal steps, σ 0.05). Each window starts after two report intervals and lasts %.0f s. etcd writes are the members' largest `%s` delta per second.",
		fan.Replicas, fan.Groups, s.WindowS, etcdProposalsMetric)
	table = nil
	for _, w := range fan.Windows {
		fw := "no such metric"
		if w.FulcrumWritesPerSecond != nil {
			fw = bench.Num(*w.FulcrumWritesPerSecond, 1)
		}
		table = append(table, []string{strconv.FormatInt(w.IntervalMS, 10) + " ms", bench.Num(w.ReportsPerSecond, 0), bench.Num(w.LatencyP50MS, 2), bench.Num(w.LatencyP99MS, 2),
			strconv.FormatInt(w.Errors, 10), usCell(w.InstanceCPUUSPerReport), bench.Num(w.EtcdWritesPerSecond, 1), fw})
	}
	rep.Table([]string{"report interval", "reports/s", "latency p50 ms", "latency p99 ms", "errors", "instances' CPU µs/report", "etcd writes/s", "fulcrum's etcd writes/s"}, table)
	rep.Para("Registering the %d replicas committed %.0f proposals in etcd (at least one per registration): the count sees fulcrum's writes.", fan.Replicas, fan.RegistrationEtcdWrites)
	rep.Para("With the analyzer leader in serve, a report sent to an instance that does not lead its group is answered 307 and the replica reports to the group's leader from then on, so each group's reports land at one instance; the groups' leaders are spread over the three. The CPU per report is the three instances' together, their own loops included (so it is higher per report at the lower rate).")

	rep.Heading("Instance failover")
	rep.Para("%d Go clients (client library, `Options.FrontDoors` with every instance's front door, A's first) call a per-request group in a closed loop, and %d more an on-demand group (bound through A's front door, then calling their replicas). A is killed with `kill -9`. Per-request: first successful call after the kill p50 %.1f ms, max %.1f ms; %d of %d calls failed (at most those in flight at A). On-demand: %d of %d calls failed.",
		fail.Clients, fail.Clients, fail.FirstSuccessP50MS, fail.FirstSuccessMaxMS, fail.PerRequestFailed, fail.PerRequestCalls, fail.OnDemandFailed, fail.OnDemandCalls)
	if fail.FirstError != "" {
		rep.Para("First failed call: `%s`.", fail.FirstError)
	}

	rep.Heading("Leader failover")
	if leader.Measured {
		rep.Para("An on-demand group on B and C (A is gone) and a monitor given both admin URLs; kill -9 of the group's analyzer leader (%s, term %d) → the monitor's first advisory with a higher term (%d): %.0f ms.",
			leader.Killed, leader.OldTerm, leader.NewTerm, leader.NewTermAdvisoryMS)
	} else {
		rep.Para("%s.", leader.Reason)
	}
	return rep
}

func deref(r *OverheadRow) []OverheadRow {
	if r == nil {
		return nil
	}
	return []OverheadRow{*r}
}

func ratioCell(v *float64) string {
	if v == nil {
		return "–"
	}
	return bench.Num(*v, 3)
}

func usCell(v *float64) string {
	if v == nil {
		return "–"
	}
	return bench.Num(*v, 1)
}

// writeCSV writes overhead.csv, fanin.csv and effectiveness.csv.
func writeCSV(env *bench.Env, rows []OverheadRow, control *OverheadRow, eff []EffRun, fan FanIn) error {
	header := append(append([]string{"name"}, bench.FiguresHeader...), "throughput_ratio_to_one", "latency_ratio_to_one", "instance_cpu_us_per_call")
	var table [][]string
	for _, r := range append(append([]OverheadRow(nil), rows...), deref(control)...) {
		table = append(table, append(append([]string{r.Name}, r.Figures.CSV()...), ratioCell(r.ThroughputRatio), ratioCell(r.LatencyRatio), usCell(r.InstanceCPUUS)))
	}
	if err := env.WriteCSV("overhead.csv", header, table); err != nil {
		return err
	}
	table = nil
	for _, w := range fan.Windows {
		fw := ""
		if w.FulcrumWritesPerSecond != nil {
			fw = bench.Num(*w.FulcrumWritesPerSecond, 2)
		}
		table = append(table, []string{strconv.FormatInt(w.IntervalMS, 10), bench.Num(w.Seconds, 2), strconv.FormatInt(w.Reports, 10), strconv.FormatInt(w.Errors, 10),
			bench.Num(w.LatencyP50MS, 3), bench.Num(w.LatencyP99MS, 3), bench.Num(w.LatencyMaxMS, 3), usCell(w.InstanceCPUUSPerReport), bench.Num(w.EtcdWritesPerSecond, 2), fw})
	}
	if err := env.WriteCSV("fanin.csv", []string{"report_interval_ms", "seconds", "reports", "errors", "latency_p50_ms", "latency_p99_ms", "latency_max_ms", "instance_cpu_us_per_report", "etcd_writes_per_second", "fulcrum_etcd_writes_per_second"}, table); err != nil {
		return err
	}
	table = nil
	for _, r := range eff {
		row := r.Run
		eq := ""
		if row.EquilibriumS != nil {
			eq = strconv.Itoa(*row.EquilibriumS)
		}
		notice := ""
		if r.NoticeP50MS != nil {
			notice = bench.Num(*r.NoticeP50MS, 1)
		}
		table = append(table, []string{r.Config, r.Leader, strconv.Itoa(row.DurationS), eq, bench.Num(row.SteadyCV, 4), bench.Num(row.OptimalCV, 4),
			strconv.Itoa(r.ClientRebinds), bench.Num(row.RebindsPerS, 3), strconv.FormatInt(row.Count, 10), strconv.FormatInt(row.Errors, 10),
			strconv.FormatUint(r.RebindsAtNonLeaders, 10), strconv.Itoa(r.LookedUp), strconv.Itoa(r.ReachedLeader), notice, row.Target})
	}
	return env.WriteCSV("effectiveness.csv", []string{"config", "leader", "duration_s", "equilibrium_s", "steady_cv", "optimal_cv", "client_rebinds", "rebinds_per_s_steady",
		"calls", "errors", "rebinds_at_non_leaders", "looked_up_at_non_leaders", "reached_leader", "notice_p50_ms", "effectiveness_target"}, table)
}

// effSection is the report's effectiveness section.
func effSection(rep *bench.Report, s settings, eff []EffRun) {
	rep.Heading("Equilibrium: effectiveness with three instances against one")
	rep.Para("The effectiveness experiment's run (`fulcrum bench effectiveness`: its open-loop clients, schedule, equilibrium and CV) with %s/%s, its headline pair: %d replicas of the prime service (their monitors given all three admin URLs), %d clients at %s calls/s started %s apart, %.0f s per run, a fresh group and fresh replicas per run. "+
		"one-instance: every client at the front door of the group's analyzer leader. three-instances: client i given the three front doors (`Options.FrontDoors`) starting at instance i mod 3, so it binds and rebinds there while it answers. "+
		"Equilibrium: the first %d s window with every replica within ±%.0f%% of the mean; steady CV over the replicas' mean rates from equilibrium to the end.",
		effStrategy, effBinding, s.EffReplicas, len(s.EffRates), joinNums(s.EffRates), effectiveness.ClientGap, s.EffDurationS, stats.DefaultWindow, stats.DefaultBand*100)
	var table [][]string
	for _, r := range eff {
		row := r.Run
		notice := "–"
		if r.NoticeP50MS != nil {
			notice = bench.Num(*r.NoticeP50MS, 1) + " / " + bench.Num(*r.NoticeMaxMS, 1)
		}
		table = append(table, []string{r.Config, r.Leader, eqText(row.EquilibriumS), bench.Num(row.SteadyCV, 4), bench.Num(row.OptimalCV, 4),
			strconv.Itoa(r.ClientRebinds), bench.Num(row.RebindsPerS, 2), effectiveness.FormatRates(row.ReplicaRates), strconv.FormatInt(row.Errors, 10),
			strconv.FormatUint(r.RebindsAtNonLeaders, 10), strconv.Itoa(r.LookedUp), strconv.Itoa(r.ReachedLeader), notice})
	}
	rep.Table([]string{"configuration", "leader", "equilibrium", "steady CV", "optimal CV", "rebinds", "rebinds/s steady", "replica rates (calls/s)", "failed",
		"rebinds at non-leaders", "looked up there", "reached the leader", "notice delay p50 / max ms"}, table)
	rep.Para("Rebinds: the clients' binding changes over the run. At non-leaders: their front doors' `rebinds` counters; looked up there: their `binding` events with `looked_up` (a move read from etcd); reached the leader: those matched, by client and replica, with a `binding` event with `elsewhere` at the leader (its bound notice applied), the delay between the two events. Per instance:")
	table = nil
	for _, r := range eff {
		for _, in := range r.Instances {
			role := ""
			if in.Leader {
				role = "leader"
			}
			table = append(table, []string{r.Config, in.Name, role, strconv.FormatUint(in.Bindings, 10), strconv.FormatUint(in.Rebinds, 10),
				strconv.Itoa(in.Planned), strconv.Itoa(in.LookedUp), strconv.Itoa(in.Elsewhere)})
		}
	}
	rep.Table([]string{"configuration", "instance", "role", "bindings", "rebinds", "planned bindings", "looked-up bindings", "elsewhere (notices)"}, table)
	for _, r := range eff {
		if r.BoundPushFailures > 0 {
			rep.Para("%s: %.0f bound notices failed (`fulcrum_cluster_push_failures_total{kind=\"bound\"}`).", r.Config, r.BoundPushFailures)
		}
	}
	for _, r := range eff {
		rep.Image(r.Config, "rates-"+r.Config+".png")
	}
}

func joinNums(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = bench.Num(x, 0)
	}
	return strings.Join(parts, ",")
}
