package python

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// Target names, as report.md and results.json list them.
const (
	TargetMonitor = "Python monitor's cost per call ≤ 5% (ASGIMonitor, same Starlette replica with and without)"
	TargetClient  = "Python bound calls ≥ 0.95 × direct httpx calls to the same replica (BindingTransport)"
)

// judge records the two targets in rep.
func judge(rep *bench.Report, rows []Row, r Ratios) {
	failed := map[string]int64{}
	for _, row := range rows {
		failed[row.Name] = row.Errors
	}
	noise := "unknown"
	if r.ControlTime.Median.Known() {
		noise = fmt.Sprintf("%.3f", r.Noise())
	}
	switch {
	case failed[ArmPlain]+failed[ArmMonitored] > 0:
		rep.TargetUnknown(TargetMonitor, "%d failed calls (plain %d, monitored %d)", failed[ArmPlain]+failed[ArmMonitored], failed[ArmPlain], failed[ArmMonitored])
	case !r.MonitorTime.Median.Known():
		rep.TargetUnknown(TargetMonitor, "no round measured both arms")
	default:
		rep.Target(TargetMonitor, r.MonitorMet(), "median per-round time per call, monitored/plain, %.3f: cost %+.1f%%; on p50 latency %s; replica CPU per call %s; A/A control %s (noise %s)",
			r.MonitorTime.Median, 100*r.MonitorCost(), fmtNum(r.MonitorP50.Median, 3), fmtNum(r.MonitorCPU.Median, 3), fmtNum(r.ControlTime.Median, 3), noise)
	}
	switch {
	case failed[ArmBound]+failed[ArmDirect] > 0:
		rep.TargetUnknown(TargetClient, "%d failed calls (bound %d, direct %d)", failed[ArmBound]+failed[ArmDirect], failed[ArmBound], failed[ArmDirect])
	case !r.BoundThroughput.Median.Known():
		rep.TargetUnknown(TargetClient, "no round measured both arms")
	default:
		rep.Target(TargetClient, r.BoundMet(), "median per-round throughput ratio, bound/direct, %.3f; on p50 latency %s; A/A noise %s",
			r.BoundThroughput.Median, fmtNum(r.BoundP50.Median, 3), noise)
	}
}

// writeReport writes the CSV files and plots and fills rep.
func writeReport(env *bench.Env, rep *bench.Report, rows []Row, rounds []Round, r Ratios, py Interpreter, pin Pinning, sz sizes, workUS float64) error {
	judge(rep, rows, r)
	var segs [][]string
	for i, rd := range rounds {
		for _, arm := range Arms {
			m, ok := rd[arm]
			if !ok {
				continue
			}
			segs = append(segs, []string{strconv.Itoa(i + 1), arm, strconv.FormatInt(m.Calls, 10), strconv.FormatInt(m.Errors, 10),
				bench.Num(m.ElapsedS, 6), fmtNum(ratio(float64(m.Calls), m.ElapsedS), 1), bench.Num(m.MeanUS, 1), bench.Num(m.P50US, 1),
				bench.Num(m.P99US, 1), fmtNum(Num(m.ReplicaCPUUS), 1)})
		}
	}
	if err := env.WriteCSV("rounds.csv", []string{"round", "arm", "calls", "errors", "elapsed_s", "throughput_rps",
		"latency_mean_us", "latency_p50_us", "latency_p99_us", "replica_cpu_us_per_call"}, segs); err != nil {
		return err
	}
	var ratioRows [][]string
	x := make([]float64, len(rounds))
	lines := []bench.Line{{Name: "monitored/plain time per call"}, {Name: "monitored/plain replica CPU per call"},
		{Name: "bound/direct throughput"}, {Name: "A/A control/plain time per call"}}
	for i := range rounds {
		x[i] = float64(i + 1)
		vals := []Num{r.MonitorTime.PerRound[i], r.MonitorCPU.PerRound[i], r.BoundThroughput.PerRound[i], r.ControlTime.PerRound[i],
			r.MonitorP50.PerRound[i], r.BoundP50.PerRound[i]}
		row := []string{strconv.Itoa(i + 1)}
		for j, v := range vals {
			row = append(row, fmtNum(v, 4))
			if j < len(lines) {
				lines[j].X = append(lines[j].X, x[i])
				lines[j].Y = append(lines[j].Y, float64(v))
			}
		}
		ratioRows = append(ratioRows, row)
	}
	if err := env.WriteCSV("ratios.csv", []string{"round", "monitor_time", "monitor_cpu", "bound_throughput", "control_time", "monitor_p50", "bound_p50"}, ratioRows); err != nil {
		return err
	}
	if err := env.LineChart("ratios.png", bench.Axes{Title: "Per-round ratios (1 = no cost)", X: "round", Y: "ratio"}, lines); err != nil {
		return err
	}
	names := make([]string, len(rows))
	rps := make([]float64, len(rows))
	cpu := make([]float64, len(rows))
	for i, row := range rows {
		names[i], rps[i], cpu[i] = row.Name, float64(row.ThroughputRPS), float64(row.ReplicaCPUUSPerCall)
	}
	if err := env.BarChart("throughput.png", bench.Axes{Title: "Closed-loop calls/s, one caller (median over rounds)", X: "arm", Y: "calls/s"}, names,
		[]bench.Series{{Name: "calls/s", Values: rps}}); err != nil {
		return err
	}
	if err := env.BarChart("replica_cpu.png", bench.Axes{Title: "Replica CPU time per call", X: "arm", Y: "µs"}, names,
		[]bench.Series{{Name: "µs per call", Values: cpu}}); err != nil {
		return err
	}

	rep.Heading("Set-up")
	pkgs := make([]string, 0, len(py.Packages))
	for _, k := range []string{"fulcrum-client", "httpx", "starlette", "uvicorn"} {
		pkgs = append(pkgs, k+" "+py.Packages[k])
	}
	rep.Para("Python %s (`%s`): %s. A Starlette app under uvicorn (one worker, one process) whose `GET /work` spends %s µs of the thread's CPU time per call; "+
		"four processes of it: `plain`, `plain-control` (the A/A control), `monitored` (wrapped in `ASGIMonitor`, registered in an on-demand group of a fulcrum balancer) "+
		"and `client` (the same, in a second on-demand group). "+
		"One Python driver process calls them with one closed-loop caller per arm (httpx, one kept-alive connection): `plain`, `plain-control`, `monitored` and `direct` (the client replica) with a plain `httpx.Client`, "+
		"`bound` through the second group's front door with `BindingTransport`, bound to the client replica after its warm-up and calling it directly. "+
		"Each replica but the client one serves one arm, so that none is kept warmer than the one it is compared with. "+
		"%d warm-up calls per arm, then %d rounds of %d calls per arm in Williams-design orders; %s. Each ratio is taken within a round; the targets judge the median over rounds.",
		py.Version, py.Path, strings.Join(pkgs, ", "), strconv.FormatFloat(workUS, 'f', -1, 64), sz.warmup, sz.rounds, sz.calls, pin.Note)
	rep.Heading("Arms")
	var table [][]string
	for _, row := range rows {
		table = append(table, []string{"`" + row.Name + "`", row.Replica, row.Client, strconv.FormatInt(row.Calls, 10), strconv.FormatInt(row.Errors, 10),
			fmtNum(row.ThroughputRPS, 0), fmtNum(row.LatencyMeanUS, 1), fmtNum(row.LatencyP50US, 1), fmtNum(row.LatencyP99US, 1), fmtNum(row.ReplicaCPUUSPerCall, 1)})
	}
	rep.Table([]string{"arm", "replica", "client", "calls", "errors", "calls/s", "mean µs", "p50 µs", "p99 µs", "replica CPU µs/call"}, table)
	rep.Para("calls/s and latencies: medians over rounds of each round's figure. Replica CPU: the replica process's CPU time (/proc) over every round's calls.")
	rep.Image("closed-loop calls/s", "throughput.png")
	rep.Heading("Ratios")
	rep.Table([]string{"ratio", "median", "per round"}, [][]string{
		{"monitored/plain, time per call", fmtNum(r.MonitorTime.Median, 3), joinNums(r.MonitorTime.PerRound)},
		{"monitored/plain, replica CPU per call", fmtNum(r.MonitorCPU.Median, 3), joinNums(r.MonitorCPU.PerRound)},
		{"bound/direct, throughput", fmtNum(r.BoundThroughput.Median, 3), joinNums(r.BoundThroughput.PerRound)},
		{"A/A control/plain, time per call", fmtNum(r.ControlTime.Median, 3), joinNums(r.ControlTime.PerRound)},
		{"monitored/plain, p50 latency", fmtNum(r.MonitorP50.Median, 3), joinNums(r.MonitorP50.PerRound)},
		{"direct/bound, p50 latency", fmtNum(r.BoundP50.Median, 3), joinNums(r.BoundP50.PerRound)},
	})
	rep.Para("The monitor's cost is judged on the time per call a client sees (the driver's own time per call is in both arms, so this understates the cost to the replica); " +
		"the replica CPU ratio shows the cost to the replica itself. The p50 rows are the same comparisons on each segment's median latency, which a stall of the machine moves less than the mean; they are not judged. The A/A control compares two identical plain replicas: its distance from 1 is the noise of comparing two processes on this machine; read a ratio closer to its target than that as undecided.")
	rep.Image("per-round ratios", "ratios.png")
	rep.Image("replica CPU per call", "replica_cpu.png")
	return nil
}

// fmtNum formats a figure with prec decimals, "–" when unknown.
func fmtNum(n Num, prec int) string {
	if !n.Known() {
		return "–"
	}
	return bench.Num(float64(n), prec)
}

func joinNums(ns []Num) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmtNum(n, 3)
	}
	return strings.Join(parts, " ")
}
