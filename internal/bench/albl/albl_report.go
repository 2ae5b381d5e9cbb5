package albl

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// alblReport writes the CSV, the plots (the ALBL paper's Fig. 3–10 and the p99
// beside them) and report.md's tables and targets.
func alblReport(env *bench.Env, rep *bench.Report, scs []alblPlanned, runs []alblRun, rows []ALBLRow, step, settle time.Duration, cpu float64, load string) error {
	header := []string{"scenario", "strategy", "name", "params", "rate", "throughput_kbs", "latency_mean_ms", "latency_p99_ms", "error_rate", "sent", "answered", "replica1_share", "errors"}
	var records [][]string
	for _, r := range rows {
		params, _ := json.Marshal(r.Params)
		records = append(records, []string{r.Scenario, r.Strategy, r.Name, string(params), bench.Num(r.Rate, 0), bench.Num(r.ThroughputKBs, 2),
			bench.Num(r.LatencyMeanMS, 3), bench.Num(r.LatencyP99MS, 3), bench.Num(r.ErrorRate, 4), fmt.Sprint(r.Sent), fmt.Sprint(r.Answered), bench.Num(r.Replica1Share, 3), r.Errors})
	}
	if err := env.WriteCSV("albl.csv", header, records); err != nil {
		return err
	}
	judgeALBL(rep, rows)
	rep.Heading("Setup")
	rep.Para("Kontogiannis et al., \"An adaptive load balancing algorithm for cluster-based web systems\" (ALBL), §5, on the testbed (`internal/testbed`): two replicas of %.2f cores each (cgroup CPU quota, %s period), each in a network namespace of its own "+
		"running NGINX (one process, static 1 KB and 10 KB objects, sendfile and open-file cache) with `fulcrum agent http` beside it in its namespace "+
		"(stub_status over the namespace's loopback, the cgroup's CPU time, load `%s`, push reports to the balancer over the replica's link). "+
		"The balancer (`fulcrum serve`, per-request binding: a web switch) and the clients run in the root namespace. "+
		"The group's health checks are off — no active probes, no passive ejection — so that the strategies alone decide where calls go, as with the paper's LVS switch. "+
		"Clients are open loop: calls are sent at the rate whatever the answers do, each with the scenario's timeout; "+
		"a call without its whole object within the timeout is an error; response times are of the answered calls, from each call's intended send time. "+
		"Each strategy first runs %s at the first rate unrecorded, then holds each rate for %s (the paper: 360 s).",
		cpu, "10ms", load, settle, step)
	var params []string
	for _, r := range runs {
		p, _ := json.Marshal(r.Params)
		if len(r.Params) == 0 {
			p = []byte("defaults")
		}
		params = append(params, fmt.Sprintf("`%s`: %s %s", r.Label, r.Strategy, p))
	}
	rep.Para("Strategies: %s. ALBL probes the 1 KB object every second (its HTTP response time) and times a TCP connect (network delay, 25 ms timeout); "+
		"prequal's load probes reach `/fulcrum/probe` on NGINX, which passes them to the agent; least-loaded balances the agents' reported load; "+
		"weighted-round-robin-orca weighs rps / utilization from the agents' reports.", strings.Join(params, "; "))
	for _, sc := range scs {
		scRows := filterRows(rows, sc.Name)
		if len(scRows) == 0 {
			continue
		}
		rep.Heading("Scenario " + sc.Name)
		rep.Para("%s; client timeout %s.", sc.What, sc.Timeout)
		figs := []struct {
			file, title, y string
			val            func(ALBLRow) float64
		}{
			{"throughput", "throughput", "KB/s", func(r ALBLRow) float64 { return r.ThroughputKBs }},
			{"latency-mean", "mean response time (answered calls)", "ms", func(r ALBLRow) float64 { return r.LatencyMeanMS }},
			{"latency-p99", "p99 response time (answered calls)", "ms", func(r ALBLRow) float64 { return r.LatencyP99MS }},
			{"errors", "errors (no complete answer within the timeout)", "% of calls", func(r ALBLRow) float64 { return r.ErrorRate * 100 }},
		}
		for _, f := range figs {
			var lines []bench.Line
			for _, run := range runs {
				var l bench.Line
				l.Name = run.Label
				for _, r := range scRows {
					if r.Name == run.Label {
						v := f.val(r)
						if f.file != "throughput" && f.file != "errors" && r.Answered == 0 {
							continue // no answered call: no response time
						}
						l.X, l.Y = append(l.X, r.Rate), append(l.Y, v)
					}
				}
				lines = append(lines, l)
			}
			file := fmt.Sprintf("albl-%s-%s.png", sc.Name, f.file)
			if err := env.LineChart(file, bench.Axes{Title: fmt.Sprintf("Scenario %s: %s", sc.Name, f.title), X: "offered load (calls/s)", Y: f.y}, lines); err != nil {
				return err
			}
			rep.Image(fmt.Sprintf("scenario %s %s", sc.Name, f.title), file)
		}
		var table [][]string
		for _, r := range scRows {
			table = append(table, []string{r.Name, bench.Num(r.Rate, 0), bench.Num(r.ThroughputKBs, 1), bench.Num(r.LatencyMeanMS, 2), bench.Num(r.LatencyP99MS, 2),
				bench.Num(r.ErrorRate*100, 2), bench.Num(r.Replica1Share*100, 0), r.Errors})
		}
		rep.Table([]string{"strategy", "calls/s", "KB/s", "mean ms", "p99 ms", "errors %", "replica 1 %", "error kinds"}, table)
	}
	return nil
}

func filterRows(rows []ALBLRow, scenario string) []ALBLRow {
	var out []ALBLRow
	for _, r := range rows {
		if r.Scenario == scenario {
			out = append(out, r)
		}
	}
	return out
}

// alblBaselines are the strategies the targets compare against; every
// other strategy is one of fulcrum's adaptive ones.
var alblBaselines = []string{"round-robin", "least-connections"}

// judgeALBL records the experiment's targets:
//
//   - scenario I: no strategy's throughput below 0.95 × round-robin's at
//     any rate;
//   - scenario II: at the highest rate, some adaptive strategy with an
//     error rate ≤ least-connections' and a mean response time ≤ its;
//   - scenario III: at the highest rate, some adaptive strategy with an
//     error rate ≤ least-connections' and a mean response time ≤ 0.8 ×
//     its.
func judgeALBL(rep *bench.Report, rows []ALBLRow) {
	const nameI = "scenario I: no strategy's throughput more than 5% below round-robin's"
	if sc := filterRows(rows, "I"); len(sc) > 0 {
		worst, worstRatio, compared := "", 0.0, 0
		for _, r := range sc {
			rr, ok := findRow(sc, "round-robin", r.Rate)
			if !ok || r.Name == "round-robin" || rr.ThroughputKBs <= 0 {
				continue
			}
			compared++
			ratio := r.ThroughputKBs / rr.ThroughputKBs
			if worst == "" || ratio < worstRatio {
				worst, worstRatio = fmt.Sprintf("%s at %s calls/s (%.1f vs %.1f KB/s)", r.Name, bench.Num(r.Rate, 0), r.ThroughputKBs, rr.ThroughputKBs), ratio
			}
		}
		if compared == 0 {
			rep.TargetUnknown(nameI, "round-robin or another strategy was not run")
		} else {
			rep.Target(nameI, worstRatio >= 0.95, "lowest throughput ratio to round-robin %.3f: %s", worstRatio, worst)
		}
	}
	judgeVsLC(rep, filterRows(rows, "II"), "II", 1.0,
		"scenario II: at the highest rate an adaptive strategy's error rate and mean response time ≤ least-connections'")
	judgeVsLC(rep, filterRows(rows, "III"), "III", 0.8,
		"scenario III: at the highest rate an adaptive strategy's error rate ≤ least-connections' and mean response time ≤ 0.8 × its")
}

func judgeVsLC(rep *bench.Report, sc []ALBLRow, scenario string, latencyFactor float64, name string) {
	if len(sc) == 0 {
		return
	}
	top := 0.0
	for _, r := range sc {
		if r.Name == "least-connections" {
			top = max(top, r.Rate)
		}
	}
	lc, ok := findRow(sc, "least-connections", top)
	if !ok {
		rep.TargetUnknown(name, "least-connections was not run")
		return
	}
	var adaptive []ALBLRow
	for _, r := range sc {
		if r.Rate == top && !slices.Contains(alblBaselines, r.Name) {
			adaptive = append(adaptive, r)
		}
	}
	if len(adaptive) == 0 {
		rep.TargetUnknown(name, "no adaptive strategy was run")
		return
	}
	meets := func(r ALBLRow) bool {
		return r.Answered > 0 && r.ErrorRate <= lc.ErrorRate && r.LatencyMeanMS <= latencyFactor*lc.LatencyMeanMS
	}
	slices.SortFunc(adaptive, func(a, b ALBLRow) int {
		ma, mb := meets(a), meets(b)
		switch {
		case ma != mb && ma:
			return -1
		case ma != mb:
			return 1
		case a.ErrorRate != b.ErrorRate:
			return cmp.Compare(a.ErrorRate, b.ErrorRate)
		}
		return cmp.Compare(a.LatencyMeanMS, b.LatencyMeanMS)
	})
	best := adaptive[0]
	rep.Target(name, meets(best), "at %s calls/s: best adaptive %s errors %.2f%%, mean %.2f ms; least-connections errors %.2f%%, mean %.2f ms (bound %.2f ms)",
		bench.Num(top, 0), best.Name, best.ErrorRate*100, best.LatencyMeanMS, lc.ErrorRate*100, lc.LatencyMeanMS, latencyFactor*lc.LatencyMeanMS)
}

func findRow(rows []ALBLRow, name string, rate float64) (ALBLRow, bool) {
	for _, r := range rows {
		if r.Name == name && r.Rate == rate {
			return r, true
		}
	}
	return ALBLRow{}, false
}
