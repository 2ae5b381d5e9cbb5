package albl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ALBLName is the albl experiment's name.
const ALBLName = "albl"

func init() {
	bench.Register(ALBLName, func() bench.Experiment { return newALBL() })
}

// alblScenario is one of the ALBL paper's scenarios (§5).
type alblScenario struct {
	// Name is "I", "II" or "III".
	Name string
	// What says what the scenario is, for the report.
	What string
	// Object is the path the clients GET, ObjectBytes its size.
	Object      string
	ObjectBytes int64
	// Timeout is the clients' timeout: a call not answered within it is
	// an error (10 s; 5 s in scenario II, as in the paper).
	Timeout time.Duration
	// Shaped shapes replica 1's link (alblShapedLink); Hog runs a CPU hog
	// in replica 1's cgroup.
	Shaped, Hog bool
	// Rates by size: the paper's sweep, four of it (--quick), one
	// (--smoke).
	Full, Quick, Smoke []float64
}

// sweep returns from, from+step, ... up to to.
func sweep(from, to, step float64) []float64 {
	var out []float64
	for r := from; r <= to+1e-9; r += step {
		out = append(out, r)
	}
	return out
}

// alblScenarios are the ALBL paper §5.1–5.3.
var alblScenarios = []alblScenario{
	{
		Name: "I", What: "no load, 1 KB object (ALBL paper §5.1, Fig. 3–4)",
		Object: "/1k", ObjectBytes: 1024, Timeout: 10 * time.Second,
		// "20 ... until 2000 HTTP requests per second (actually 1970
		// requests/sec), with a step of 50".
		Full: sweep(20, 1970, 50), Quick: []float64{20, 670, 1320, 1970}, Smoke: []float64{50},
	},
	{
		Name: "II", What: "replica 1's link shaped by tbf to 0.5 Mbit/s (10 ms queue, 2 KB burst), 10 KB object, client timeout 5 s (ALBL paper §5.2, Fig. 5–7)",
		Object: "/10k", ObjectBytes: 10 * 1024, Timeout: 5 * time.Second, Shaped: true,
		Full: sweep(10, 120, 10), Quick: []float64{10, 40, 80, 120}, Smoke: []float64{20},
	},
	{
		Name: "III", What: "a CPU hog in replica 1's cgroup, 1 KB object (ALBL paper §5.3, Fig. 8–10)",
		Object: "/1k", ObjectBytes: 1024, Timeout: 10 * time.Second, Hog: true,
		Full: sweep(10, 120, 10), Quick: []float64{10, 40, 80, 120}, Smoke: []float64{20},
	},
}

// alblRun is one strategy configuration: Label names it in rows and
// plots (albl runs twice, with a low and a high threshold).
type alblRun struct {
	Label, Strategy string
	Params          map[string]any
}

// The ALBL thresholds (the ALBL paper §5.2 tests "a small threshold value that
// causes network delay metric to be of importance on the weight
// calculation (use of Equation 6)" and "a high threshold value that
// causes the HTTP response time to be the key metric (from Equation 5)";
// it gives no values). On the testbed's veths a healthy replica answers
// the 1 KB probe in well under a millisecond and the congested one in
// tens to hundreds: 1 ms is low (equation 6 whenever no replica is
// faster than that), 1 s is high (equation 5 unless every replica is
// that slow).
const (
	alblLowThreshold  = "1ms"
	alblHighThreshold = "1s"
	// alblProbeObject is the small object ALBL fetches to time a replica
	// (the 1 KB object of scenarios I and III).
	alblProbeObject = "/1k"
)

// alblRuns are the strategies compared, each in per-request binding.
// weighted-round-robin-orca's blackout period (A58: 10 s, during which a
// replica's new weight is not yet used) is shortened to 2 s in --quick
// and --smoke runs, whose steps are shorter than it; params records it.
func alblRuns(size bench.Size) []alblRun {
	orca := map[string]any{}
	if size != bench.Full {
		orca["blackout_period"] = "2s"
	}
	return []alblRun{
		{Label: "round-robin", Strategy: "round-robin"},
		{Label: "least-connections", Strategy: "least-connections"},
		{Label: "albl-low", Strategy: "albl", Params: map[string]any{"threshold": alblLowThreshold, "object": alblProbeObject}},
		{Label: "albl-high", Strategy: "albl", Params: map[string]any{"threshold": alblHighThreshold, "object": alblProbeObject}},
		{Label: "least-loaded", Strategy: "least-loaded"},
		{Label: "power-of-two", Strategy: "power-of-two"},
		{Label: "peak-ewma", Strategy: "peak-ewma"},
		{Label: "prequal", Strategy: "prequal"},
		{Label: "weighted-round-robin-orca", Strategy: "weighted-round-robin-orca", Params: orca},
	}
}

// ALBL is the ALBL paper's experiment (§5) on the testbed: two NGINX replicas of
// equal CPU, each with fulcrum agent http beside it, behind a balancer in
// per-request binding; open-loop clients at fixed rates swept upward,
// each rate held for a step; for every scenario, strategy and rate the
// throughput, the mean and p99 response time of the answered calls and
// the error rate.
type ALBL struct {
	// Scenarios to run, of I, II, III (default all).
	Scenarios []string
	// Strategies to run, by label (default all of alblRuns).
	Strategies []string
	// Step is how long each rate is held; 0: by size (30 s full, 5 s
	// quick, 1 s smoke; the paper held 360 s).
	Step time.Duration
	// Settle is how long each strategy runs at the first rate, unrecorded,
	// before the sweep (probes, weights and reports settle); 0: by size
	// (15 s, 3 s, 500 ms).
	Settle time.Duration
	// RatesI, RatesII, RatesIII replace a scenario's rates.
	RatesI, RatesII, RatesIII []float64
	// CPU is each replica's CPU quota in cores (default 0.5: the two
	// replicas leave one core to the balancer, the agents and the
	// clients).
	CPU float64
	// Load is what the agents report as the replicas' load (what
	// least-loaded balances): cpu (default; the ALBL paper's least-loaded
	// balances a CPU load index), connections or rate.
	Load string
}

func newALBL() *ALBL { return &ALBL{CPU: 0.5, Load: "cpu"} }

// Name implements Experiment.
func (x *ALBL) Name() string { return ALBLName }

// OnTestbed implements OnTestbed: it needs root and the testbed.
func (*ALBL) OnTestbed() bool { return true }

// Summary implements Experiment.
func (x *ALBL) Summary() string {
	return "Kontogiannis et al. (ALBL), Fig. 3–10: throughput, response time and errors of 9 strategies over NGINX replicas on the testbed (needs root)"
}

// AddFlags implements FlagAdder.
func (x *ALBL) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&x.Scenarios, "scenarios", x.Scenarios, "scenarios to run, of I, II, III (default all)")
	var labels []string
	for _, r := range alblRuns(bench.Full) {
		labels = append(labels, r.Label)
	}
	fs.StringSliceVar(&x.Strategies, "strategies", x.Strategies, "strategies to run (default all: "+strings.Join(labels, ", ")+")")
	fs.DurationVar(&x.Step, "step", x.Step, "how long each rate is held (default 30s; 5s with --quick, 1s with --smoke)")
	fs.DurationVar(&x.Settle, "settle", x.Settle, "unrecorded run of each strategy at the first rate (default 15s; 3s with --quick, 500ms with --smoke)")
	fs.Var((*bench.RateList)(&x.RatesI), "rates-i", "scenario I's rates in calls/s, comma-separated (default 20,70,...,1970)")
	fs.Var((*bench.RateList)(&x.RatesII), "rates-ii", "scenario II's rates (default 10,20,...,120)")
	fs.Var((*bench.RateList)(&x.RatesIII), "rates-iii", "scenario III's rates (default 10,20,...,120)")
	fs.Float64Var(&x.CPU, "cpu", x.CPU, "each replica's CPU quota in cores")
	fs.StringVar(&x.Load, "load", x.Load, "what the agents report as load (least-loaded balances it): cpu, connections or rate")
}

// Check implements Checker.
func (x *ALBL) Check(size bench.Size) error {
	_, _, err := x.plan(size)
	return err
}

// alblPlanned is one scenario of a run, with its rates.
type alblPlanned struct {
	alblScenario
	Rates []float64
}

// plan checks the settings and returns the scenarios and runs to do.
func (x *ALBL) plan(size bench.Size) ([]alblPlanned, []alblRun, error) {
	want := x.Scenarios
	if len(want) == 0 {
		want = []string{"I", "II", "III"}
	}
	custom := map[string][]float64{"I": x.RatesI, "II": x.RatesII, "III": x.RatesIII}
	var scs []alblPlanned
	for _, name := range want {
		name = strings.ToUpper(strings.TrimSpace(name))
		i := slices.IndexFunc(alblScenarios, func(s alblScenario) bool { return s.Name == name })
		if i < 0 {
			return nil, nil, &protocol.FieldError{Field: "--scenarios", Value: name, Allowed: "I, II or III"}
		}
		if slices.ContainsFunc(scs, func(p alblPlanned) bool { return p.Name == name }) {
			return nil, nil, &protocol.FieldError{Field: "--scenarios", Value: name, Allowed: "each scenario once"}
		}
		sc := alblScenarios[i]
		rates := bench.Pick(size, sc.Full, sc.Quick, sc.Smoke)
		if c := custom[name]; len(c) > 0 {
			rates = c
		}
		for _, r := range rates {
			if !(r > 0 && r <= 20000) {
				return nil, nil, &protocol.FieldError{Field: "--rates-" + strings.ToLower(name), Value: r, Allowed: "each rate in (0, 20000] calls/s"}
			}
		}
		scs = append(scs, alblPlanned{alblScenario: sc, Rates: slices.Clone(rates)})
	}
	all := alblRuns(size)
	var runs []alblRun
	if len(x.Strategies) == 0 {
		runs = all
	}
	for _, label := range x.Strategies {
		label = strings.TrimSpace(label)
		i := slices.IndexFunc(all, func(r alblRun) bool { return r.Label == label })
		if i < 0 {
			var labels []string
			for _, r := range all {
				labels = append(labels, r.Label)
			}
			return nil, nil, &protocol.FieldError{Field: "--strategies", Value: label, Allowed: "one of " + strings.Join(labels, ", ")}
		}
		if slices.ContainsFunc(runs, func(r alblRun) bool { return r.Label == label }) {
			return nil, nil, &protocol.FieldError{Field: "--strategies", Value: label, Allowed: "each strategy once"}
		}
		runs = append(runs, all[i])
	}
	if x.Step < 0 || (x.Step > 0 && x.Step < 500*time.Millisecond) {
		return nil, nil, &protocol.FieldError{Field: "--step", Value: x.Step.String(), Allowed: "at least 500ms"}
	}
	if x.Settle < 0 {
		return nil, nil, &protocol.FieldError{Field: "--settle", Value: x.Settle.String(), Allowed: "must not be negative"}
	}
	if !(x.CPU >= 0.1 && x.CPU <= 0.9) {
		return nil, nil, &protocol.FieldError{Field: "--cpu", Value: x.CPU, Allowed: "in [0.1, 0.9] cores: two replicas must leave the balancer and the clients a core"}
	}
	if x.Load == "" {
		x.Load = "cpu"
	}
	switch x.Load {
	case "cpu", "connections", "rate":
	default:
		return nil, nil, &protocol.FieldError{Field: "--load", Value: x.Load, Allowed: "cpu, connections or rate"}
	}
	return scs, runs, nil
}

// ALBLRow is one scenario × strategy × rate in results.json.
type ALBLRow struct {
	// Name is the strategy's label (albl-low, albl-high, or the
	// strategy's name).
	Name     string         `json:"name"`
	Scenario string         `json:"scenario"`
	Strategy string         `json:"strategy"`
	Params   map[string]any `json:"params"`
	// Rate is the offered load in calls/s.
	Rate float64 `json:"rate"`
	// ThroughputKBs is the answered objects' KB per second.
	ThroughputKBs float64 `json:"throughput_kbs"`
	// LatencyMeanMS and LatencyP99MS are over the answered calls, from
	// each call's intended send time.
	LatencyMeanMS float64 `json:"latency_mean_ms"`
	LatencyP99MS  float64 `json:"latency_p99_ms"`
	// ErrorRate is the share of calls without a complete answer within
	// the client timeout (0..1).
	ErrorRate float64 `json:"error_rate"`
	Sent      int64   `json:"sent"`
	Answered  int64   `json:"answered"`
	// Replica1Share is the share of the answered calls that replica 1
	// (the shaped or hogged one) served.
	Replica1Share float64 `json:"replica1_share"`
	// Errors lists the errors by kind, most frequent first.
	Errors     string  `json:"errors,omitempty"`
	SendLagP99 float64 `json:"send_lag_p99_ms"`
	StepS      float64 `json:"step_s"`
	TimeoutS   float64 `json:"timeout_s"`
}

// Run implements Experiment.
func (x *ALBL) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	scs, runs, err := x.plan(env.Size)
	if err != nil {
		return nil, err
	}
	step := x.Step
	if step == 0 {
		step = bench.Pick(env.Size, 30*time.Second, 5*time.Second, time.Second)
	}
	settle := x.Settle
	if settle == 0 {
		settle = bench.Pick(env.Size, 15*time.Second, 3*time.Second, 500*time.Millisecond)
	}
	var rows []ALBLRow
	for _, sc := range scs {
		scRows, err := x.runScenario(ctx, env, sc, runs, step, settle)
		rows = append(rows, scRows...)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	res := &bench.Results{Rows: rows, Report: bench.NewReport("fulcrum bench albl"), Extra: map[string]any{
		"step_s": step.Seconds(), "settle_s": settle.Seconds(), "replica_cpu": x.CPU, "agent_load": x.Load,
		"link": alblShapedLink.String(),
	}}
	if err := alblReport(env, res.Report, scs, runs, rows, step, settle, x.CPU, x.Load); err != nil {
		return nil, err
	}
	return res, nil
}

// runScenario builds sc's cluster and sweeps every strategy over its
// rates.
func (x *ALBL) runScenario(ctx context.Context, env *bench.Env, sc alblPlanned, runs []alblRun, step, settle time.Duration) ([]ALBLRow, error) {
	env.Logf("albl: scenario %s: %s; rates %s calls/s, %s per rate", sc.Name, sc.What, strings.Join(bench.FormatRates(sc.Rates), ","), step)
	c, err := startALBLCluster(ctx, env, sc.alblScenario, x.CPU, x.Load)
	if err != nil {
		return nil, err
	}
	defer c.close()
	url := c.door + sc.Object
	var rows []ALBLRow
	for _, run := range runs {
		if err := alblSetStrategy(ctx, c.bal, alblGroup, run.Strategy, run.Params); err != nil {
			return rows, err
		}
		hc := alblClient(sc.Timeout)
		if _, err := runALBLStep(ctx, hc, url, sc.ObjectBytes, sc.Rates[0], settle, sc.Timeout); err != nil {
			return rows, err
		}
		for _, rate := range sc.Rates {
			st, err := runALBLStep(ctx, hc, url, sc.ObjectBytes, rate, step, sc.Timeout)
			if err != nil {
				return rows, err
			}
			row := alblRowOf(sc.alblScenario, run, rate, st, sc.Timeout)
			env.Logf("albl: %s %-26s %6s/s: %8.1f KB/s, mean %8.2f ms, p99 %8.2f ms, errors %5.1f%%, replica 1 %3.0f%%",
				sc.Name, run.Label, bench.Num(rate, 0), row.ThroughputKBs, row.LatencyMeanMS, row.LatencyP99MS, row.ErrorRate*100, row.Replica1Share*100)
			rows = append(rows, row)
		}
		hc.CloseIdleConnections()
	}
	return rows, nil
}

// alblRowOf makes a step's row.
func alblRowOf(sc alblScenario, run alblRun, rate float64, st alblStep, timeout time.Duration) ALBLRow {
	sum := st.Rec.Summary()
	params := map[string]any{}
	maps.Copy(params, run.Params)
	row := ALBLRow{
		Name: run.Label, Scenario: sc.Name, Strategy: run.Strategy, Params: params, Rate: rate,
		ThroughputKBs: st.ThroughputKBs(), LatencyMeanMS: sum.Mean / 1000, LatencyP99MS: sum.P99 / 1000,
		ErrorRate: st.ErrorRate(), Sent: st.Sent, Answered: st.Answered,
		Errors:     errorKinds(st.ErrorKinds),
		SendLagP99: st.SendLag.Percentile(99) / 1000, StepS: st.Duration.Seconds(), TimeoutS: timeout.Seconds(),
	}
	if st.Answered > 0 {
		row.Replica1Share = float64(st.Served["1"]) / float64(st.Answered)
	}
	return row
}

// errorKinds lists counts by kind, most frequent first.
func errorKinds(kinds map[string]int64) string {
	keys := slices.Collect(maps.Keys(kinds))
	slices.SortFunc(keys, func(a, b string) int {
		if kinds[a] != kinds[b] {
			if kinds[a] > kinds[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", kinds[k], k)
	}
	return strings.Join(parts, "; ")
}
