package overhead

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

func init() { bench.Register("overhead", func() bench.Experiment { return &Overhead{} }) }

// cfgControl is direct again, with a replica process of its own: an A/A
// control. How far its ratio to direct lands from 1 is what two identical
// configurations differ by in this run (replica processes differ from one
// another for the whole run on a shared machine). Reported beside the
// rows, not as one.
const cfgControl = "direct-control"

// Overhead is the TAO paper's overhead experiment (§4.2, Fig. 13/14): one
// single-threaded closed-loop client and one prime replica, the same
// number of calls through each configuration, run in interleaved rounds.
type Overhead struct {
	// Calls per configuration; 0: 200,000 (the paper's), 20,000 with
	// --quick, 200 with --smoke.
	Calls int
	// Rounds the calls are split into; 0: 100 (40 with --quick, 5 with
	// --smoke). At least 5.
	Rounds int
	// TLS runs the TLS configurations instead (overhead_tls.go).
	TLS bool

	tlsCert *bench.BenchCert
}

// Name implements Experiment.
func (*Overhead) Name() string { return "overhead" }

// Summary implements Experiment.
func (*Overhead) Summary() string {
	return "Othman et al. 2001, Fig. 13/14: one client, one replica; direct, per-session, per-request, on-demand, HAProxy, NGINX"
}

// OverGIOP implements bench.OverGIOP: overhead also runs over GIOP.
func (*Overhead) OverGIOP() bool { return true }

// AddFlags implements FlagAdder.
func (o *Overhead) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Calls, "calls", 0, "calls per configuration (default 200000, --quick 20000, --smoke 200)")
	fs.IntVar(&o.Rounds, "rounds", 0, "interleaved rounds the calls are split into, at least 5 (default 100, --quick 40, --smoke 5)")
	fs.BoolVar(&o.TLS, "tls", false, "per-request with TLS termination on the lean and stdlib engines against HAProxy with TLS (http only)")
}

// sizes are the calls per configuration and the rounds for size.
func (o *Overhead) sizes(size bench.Size) (calls, rounds int) {
	calls, rounds = o.Calls, o.Rounds
	if calls <= 0 {
		calls = bench.Pick(size, 200_000, 20_000, 200)
	}
	if rounds <= 0 {
		// Short rounds: this machine's noise comes in bursts, and the
		// configurations of one round should see the same weather.
		rounds = bench.Pick(size, 100, 40, 5)
	}
	return calls, rounds
}

// Check implements Checker.
func (o *Overhead) Check(size bench.Size) error {
	calls, rounds := o.sizes(size)
	if rounds < 5 {
		return fmt.Errorf("overhead: --rounds %d, must be at least 5", rounds)
	}
	if calls < rounds {
		return fmt.Errorf("overhead: --calls %d, must be at least the number of rounds (%d)", calls, rounds)
	}
	return nil
}

// OverheadRow is one configuration's row of results.json.
type OverheadRow struct {
	Name string `json:"name"`
	bench.Figures
	// The medians of the per-round ratios to direct's round: throughput,
	// and mean latency. Null when the configuration was skipped.
	ThroughputRatio *float64 `json:"throughput_ratio_to_direct"`
	LatencyRatio    *float64 `json:"latency_ratio_to_direct"`
	// The per-round ratios' mean with 5%/95% bounds: the noise.
	ThroughputRatioBounds *stats.Bounds `json:"throughput_ratio_bounds,omitempty"`
	LatencyRatioBounds    *stats.Bounds `json:"latency_ratio_bounds,omitempty"`
	Rounds                int           `json:"rounds"`
	// CPU time per call of the replica process and of the proxy
	// process (fulcrum serve for per-request, HAProxy, NGINX) while the
	// configuration's calls ran, from /proc (Linux).
	ReplicaCPUUS *float64 `json:"replica_cpu_us_per_call,omitempty"`
	ProxyCPUUS   *float64 `json:"proxy_cpu_us_per_call,omitempty"`
	Skipped      string   `json:"skipped,omitempty"`
}

// closedLoop is what makes a configuration's calls: Callers, or an
// omniORB client process (omniLoop).
type closedLoop interface {
	Run(ctx context.Context, start time.Time, calls int, until time.Time) (bench.LoadResult, error)
	Warm(ctx context.Context, n int) error
	Close()
}

// overheadConfig is one configuration during the run.
type overheadConfig struct {
	name string
	// control marks the A/A control (cfgControl): measured like the
	// others, reported apart from the rows.
	control bool
	callers closedLoop
	skipped string
	rounds  []bench.LoadResult
	total   bench.LoadResult
	// replicaCPU and proxyCPU meter the replica's and the proxy's CPU
	// time during the configuration's segments (proxyCPU nil: no proxy).
	replicaCPU, proxyCPU *bench.CPUMeter
	// handshakeAt is the host:port whose full TLS handshakes are
	// measured (--tls; "" for none).
	handshakeAt string
}

// Run implements Experiment.
func (o *Overhead) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	if err := o.Check(env.Size); err != nil {
		return nil, err
	}
	calls, rounds := o.sizes(env.Size)
	var (
		cfgs []*overheadConfig
		tls  *tlsRun
		err  error
	)
	if o.TLS {
		cfgs, tls, err = o.setUpTLS(ctx, env)
	} else {
		cfgs, err = o.setUp(ctx, env)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range cfgs {
			if c.callers != nil {
				c.callers.Close()
			}
		}
	}()

	env.Logf("overhead: %d calls per configuration in %d interleaved rounds", calls, rounds)
	var active []*overheadConfig
	for _, c := range cfgs {
		if c.skipped == "" {
			active = append(active, c)
		}
	}
	for r := range rounds {
		share := calls / rounds
		if r < calls%rounds {
			share++
		}
		line := fmt.Sprintf("round %d/%d:", r+1, rounds)
		// The rounds follow a Williams design (bench.RoundOrder): no
		// configuration always runs first, or always right after another.
		for _, i := range bench.RoundOrder(len(active), r) {
			c := active[i]
			c.replicaCPU.Begin()
			c.proxyCPU.Begin()
			res, err := c.callers.Run(ctx, time.Time{}, share, time.Time{})
			if err != nil {
				return nil, err
			}
			c.replicaCPU.End()
			c.proxyCPU.End()
			c.rounds = append(c.rounds, res)
			if c.total.Rec == nil {
				c.total = bench.LoadResult{Rec: stats.NewRecorder()}
			}
			c.total.Rec.Merge(res.Rec)
			c.total.Errors += res.Errors
			c.total.Elapsed += res.Elapsed
			if c.total.FirstError == "" {
				c.total.FirstError = res.FirstError
			}
			f := res.Figures()
			line += fmt.Sprintf(" %s %.0f/s %.0fµs", c.name, f.ThroughputRPS, f.Mean)
		}
		env.Logf("%s", line)
	}

	rows, control := overheadRows(cfgs), overheadControl(cfgs)
	if err := o.write(env, cfgs, rows); err != nil {
		return nil, err
	}
	if tls != nil {
		if err := o.measureHandshakes(ctx, env, cfgs, tls); err != nil {
			return nil, err
		}
		res := &bench.Results{Rows: rows, Report: tlsReport(cfgs, rows, control, tls, calls, rounds), Extra: map[string]any{"tls": tls}}
		if control != nil {
			res.Extra["control"] = control
		}
		return res, nil
	}
	res := &bench.Results{Rows: rows, Report: overheadReport(env, cfgs, rows, control, calls, rounds), Extra: map[string]any{}}
	if env.Protocol == bench.ProtocolGIOP {
		res.Extra["settings"] = map[string]any{"protocol": env.Protocol, "orb": env.ORB, "calls": calls, "rounds": rounds}
	}
	if control != nil {
		res.Extra["control"] = control
	}
	return res, nil
}

// setUp starts the replicas, the balancer and the competitors, and makes
// one caller per configuration, warmed up (connected, and bound for the
// binding configurations). Every configuration has a replica process of
// its own, so that all replicas are equally busy (idle while the other
// configurations run): a replica shared by several configurations stays
// hotter than the others and answers faster.
func (o *Overhead) setUp(ctx context.Context, env *bench.Env) ([]*overheadConfig, error) {
	if env.ORB == bench.ORBOmniORB {
		return o.setUpOmniORB(ctx, env)
	}
	if env.Protocol == bench.ProtocolGIOP {
		return o.setUpGIOP(ctx, env)
	}
	plain := map[string]*bench.Replica{}
	for _, name := range []string{bench.ConfigDirect, bench.ConfigPerRequest, bench.ConfigHAProxy, bench.ConfigNGINX, cfgControl} {
		if name == bench.ConfigHAProxy && env.HAProxy.Missing != "" || name == bench.ConfigNGINX && env.NGINX.Missing != "" {
			continue
		}
		r, err := env.StartReplica(ctx, "replica-"+name, nil)
		if err != nil {
			return nil, err
		}
		plain[name] = r
	}
	// per-request proxies to a plain replica, as HAProxy and NGINX do:
	// the paper's forwarding server in front of an unmodified server.
	bal, joined, err := startOverheadGroups(ctx, env, "", plain[bench.ConfigPerRequest].URL)
	if err != nil {
		return nil, err
	}
	path := "/prime/" + strconv.Itoa(bench.PrimeN)
	cfgs := []*overheadConfig{
		{name: bench.ConfigDirect, callers: bench.NewCallers(bench.Endpoint{URL: plain[bench.ConfigDirect].URL + path}, 1),
			replicaCPU: bench.NewCPUMeter(plain[bench.ConfigDirect].Proc)},
		{name: bench.ConfigPerSession, callers: bench.NewCallers(bench.Endpoint{URL: bal.FrontDoor(bench.ConfigPerSession) + path, Binding: true}, 1),
			replicaCPU: bench.NewCPUMeter(joined[bench.ConfigPerSession].Proc)},
		{name: bench.ConfigPerRequest, callers: bench.NewCallers(bench.Endpoint{URL: bal.FrontDoor(bench.ConfigPerRequest) + path}, 1),
			replicaCPU: bench.NewCPUMeter(plain[bench.ConfigPerRequest].Proc), proxyCPU: bench.NewCPUMeter(bal.Proc)},
		{name: bench.ConfigOnDemand, callers: bench.NewCallers(bench.Endpoint{URL: bal.FrontDoor(bench.ConfigOnDemand) + path, Binding: true}, 1),
			replicaCPU: bench.NewCPUMeter(joined[bench.ConfigOnDemand].Proc)},
		{name: bench.ConfigHAProxy, skipped: env.HAProxy.Missing},
		{name: bench.ConfigNGINX, skipped: env.NGINX.Missing},
		{name: cfgControl, control: true, callers: bench.NewCallers(bench.Endpoint{URL: plain[cfgControl].URL + path}, 1),
			replicaCPU: bench.NewCPUMeter(plain[cfgControl].Proc)},
	}
	if r := plain[bench.ConfigHAProxy]; r != nil {
		px, err := env.StartHAProxy(ctx, []string{r.URL})
		if err != nil {
			return nil, err
		}
		cfgs[4].callers = bench.NewCallers(bench.Endpoint{URL: px.URL + path}, 1)
		cfgs[4].replicaCPU, cfgs[4].proxyCPU = bench.NewCPUMeter(r.Proc), bench.NewCPUMeter(px.Proc)
	}
	if r := plain[bench.ConfigNGINX]; r != nil {
		px, err := env.StartNGINX(ctx, []string{r.URL})
		if err != nil {
			return nil, err
		}
		cfgs[5].callers = bench.NewCallers(bench.Endpoint{URL: px.URL + path}, 1)
		cfgs[5].replicaCPU, cfgs[5].proxyCPU = bench.NewCPUMeter(r.Proc), bench.NewCPUMeter(px.Proc)
	}
	if err := warmOverhead(ctx, cfgs); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// warmOverhead makes every configuration's unrecorded warm-up calls
// (connections opened, binding callers bound). On an error it closes every
// configuration's callers.
func warmOverhead(ctx context.Context, cfgs []*overheadConfig) error {
	for _, c := range cfgs {
		if c.callers == nil {
			continue
		}
		if err := c.callers.Warm(ctx, 100); err != nil {
			for _, c := range cfgs {
				if c.callers != nil {
					c.callers.Close()
				}
			}
			return fmt.Errorf("overhead: %s: %w", c.name, err)
		}
	}
	return nil
}

// roundRatios are a configuration's per-round ratios to another's
// (throughput, mean latency).
func roundRatios(c, base *overheadConfig) (thr, lat []float64) {
	for r := range min(len(c.rounds), len(base.rounds)) {
		fc, fb := c.rounds[r].Figures(), base.rounds[r].Figures()
		if fb.ThroughputRPS > 0 && fb.Mean > 0 {
			thr = append(thr, fc.ThroughputRPS/fb.ThroughputRPS)
			lat = append(lat, fc.Mean/fb.Mean)
		}
	}
	return thr, lat
}

// overheadRows are the configurations' rows (the A/A control's apart).
func overheadRows(cfgs []*overheadConfig) []OverheadRow {
	rows := make([]OverheadRow, 0, len(cfgs))
	for _, c := range cfgs {
		if !c.control {
			rows = append(rows, overheadRow(c, cfgs[0]))
		}
	}
	return rows
}

// overheadControl is the A/A control's row, nil when there is none.
func overheadControl(cfgs []*overheadConfig) *OverheadRow {
	for _, c := range cfgs {
		if c.control {
			row := overheadRow(c, cfgs[0])
			return &row
		}
	}
	return nil
}

// overheadRow is c's row, with its ratios to direct.
func overheadRow(c, direct *overheadConfig) OverheadRow {
	row := OverheadRow{Name: c.name, Skipped: c.skipped, Rounds: len(c.rounds)}
	if c.skipped == "" && c.total.Rec != nil {
		row.Figures = c.total.Figures()
		row.ReplicaCPUUS, row.ProxyCPUUS = c.replicaCPU.PerCall(row.Count+row.Errors), c.proxyCPU.PerCall(row.Count+row.Errors)
		thr, lat := roundRatios(c, direct)
		if len(thr) > 0 {
			t, l := stats.Median(thr), stats.Median(lat)
			tb, lb := stats.MeanBounds(thr), stats.MeanBounds(lat)
			row.ThroughputRatio, row.LatencyRatio = &t, &l
			row.ThroughputRatioBounds, row.LatencyRatioBounds = &tb, &lb
		}
	}
	return row
}

// write writes overhead.csv, overhead-rounds.csv and the plots.
func (o *Overhead) write(env *bench.Env, cfgs []*overheadConfig, rows []OverheadRow) error {
	header := append([]string{"name"}, bench.FiguresHeader...)
	header = append(header, "throughput_ratio_to_direct", "latency_ratio_to_direct", "skipped")
	var table [][]string
	for _, r := range rows {
		table = append(table, append(append([]string{r.Name}, r.Figures.CSV()...), ratio(r.ThroughputRatio), ratio(r.LatencyRatio), r.Skipped))
	}
	if err := env.WriteCSV("overhead.csv", header, table); err != nil {
		return err
	}
	table = nil
	for _, c := range cfgs {
		for i, res := range c.rounds {
			table = append(table, append([]string{strconv.Itoa(i + 1), c.name}, res.Figures().CSV()...))
		}
	}
	if err := env.WriteCSV("overhead-rounds.csv", append([]string{"round", "name"}, bench.FiguresHeader...), table); err != nil {
		return err
	}
	var names []string
	var mean, p50, p99, thr []float64
	for _, r := range rows {
		if r.Skipped != "" {
			continue
		}
		names = append(names, r.Name)
		mean, p50, p99 = append(mean, r.Mean), append(p50, r.P50), append(p99, r.P99)
		thr = append(thr, r.ThroughputRPS)
	}
	if err := env.BarChart("overhead-latency.png", bench.Axes{Title: "Latency overhead (Othman et al. 2001, Fig. 13)", Y: "latency (µs)"}, names,
		[]bench.Series{{Name: "mean", Values: mean}, {Name: "p50", Values: p50}, {Name: "p99", Values: p99}}); err != nil {
		return err
	}
	return env.BarChart("overhead-throughput.png", bench.Axes{Title: "Throughput overhead (Othman et al. 2001, Fig. 14)", Y: "calls/s"}, names,
		[]bench.Series{{Name: "throughput", Values: thr}})
}

// comparePaper sets the run beside the TAO paper's findings (Fig. 13/14).
func comparePaper(rep *bench.Report, rows map[string]OverheadRow) {
	ps, pr, od := rows[bench.ConfigPerSession], rows[bench.ConfigPerRequest], rows[bench.ConfigOnDemand]
	if ps.LatencyRatio == nil || pr.LatencyRatio == nil || od.LatencyRatio == nil {
		return
	}
	rep.Heading("Compared with the paper")
	rep.Para("Othman et al. (2001) found that per-session binding \"imposes essentially no latency overhead\", that per-request forwarding \"more than doubles the average latency\" "+
		"and that throughput then \"decreases dramatically\", and that on-demand binding \"adds little latency\" while throughput \"only decreased slightly\". "+
		"Here, mean latency × direct: per-session %.2f, per-request %.2f, on-demand %.2f; throughput × direct: per-session %.2f, per-request %.2f, on-demand %.2f. "+
		"On loopback the network path is short, so a proxy hop or a monitor weighs more, relative to direct, than between the paper's workstations.",
		*ps.LatencyRatio, *pr.LatencyRatio, *od.LatencyRatio, *ps.ThroughputRatio, *pr.ThroughputRatio, *od.ThroughputRatio)
}

func ptrNum(p *float64) string {
	if p == nil {
		return ""
	}
	return bench.Num(*p, 1)
}

func ratio(p *float64) string {
	if p == nil {
		return ""
	}
	return bench.Num(*p, 3)
}

// overheadReport writes the tables and judges the targets.
func overheadReport(env *bench.Env, cfgs []*overheadConfig, rows []OverheadRow, control *OverheadRow, calls, rounds int) *bench.Report {
	rep := bench.NewReport("fulcrum bench overhead")
	byName := map[string]OverheadRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	switch {
	case env.ORB == bench.ORBOmniORB:
		rep.Para("%s", overheadOmniORBIntro(calls, rounds))
	case env.Protocol == bench.ProtocolGIOP:
		rep.Para("%s", overheadGIOPIntro(calls, rounds))
	default:
		rep.Para("Othman, O'Ryan and Schmidt, \"The Design and Performance of an Adaptive CORBA Load Balancing Service\" (2001), §4.2 (Fig. 13/14): one single-threaded closed-loop client, one prime replica (`GET /prime/%d`), "+
			"%d calls through each configuration, in %d interleaved rounds (each configuration in turn, every round). "+
			"Ratios are the medians of the per-round ratios to `direct` in the same round, which cancels the machine's drift. "+
			"Latencies in µs, measured by the client from sending the call to reading the whole answer.", bench.PrimeN, calls, rounds)
	}
	var table [][]string
	for _, r := range rows {
		if r.Skipped != "" {
			table = append(table, []string{r.Name, "skipped: " + r.Skipped, "", "", "", "", "", "", "", "", "", "", ""})
			continue
		}
		table = append(table, []string{
			r.Name, strconv.FormatInt(r.Count, 10), bench.Num(r.ThroughputRPS, 0), ratio(r.ThroughputRatio),
			bench.Num(r.Mean, 1), ratio(r.LatencyRatio), bench.Num(r.P5, 0), bench.Num(r.P50, 0), bench.Num(r.P95, 0), bench.Num(r.P99, 0), bench.Num(r.Max, 0), bench.Num(r.Jitter, 1),
			strconv.FormatInt(r.Errors, 10),
		})
	}
	rep.Table([]string{"configuration", "calls", "calls/s", "× direct", "mean", "× direct", "p5", "p50", "p95", "p99", "max", "jitter", "errors"}, table)
	rep.Image("latency", "overhead-latency.png")
	rep.Image("throughput", "overhead-throughput.png")

	var noise [][]string
	for _, r := range rows {
		if r.ThroughputRatioBounds == nil {
			continue
		}
		tb, lb := r.ThroughputRatioBounds, r.LatencyRatioBounds
		noise = append(noise, []string{r.Name, fmt.Sprintf("%.3f [%.3f, %.3f]", tb.Mean, tb.Lower, tb.Upper), fmt.Sprintf("%.3f [%.3f, %.3f]", lb.Mean, lb.Lower, lb.Upper)})
	}
	rep.Heading("Per-round ratios")
	rep.Para("Mean of the per-round ratios to `direct` with their 5%%/95%% bounds: how much the machine's noise moves a ratio from round to round.")
	rep.Table([]string{"configuration", "throughput × direct", "mean latency × direct"}, noise)
	if control != nil && control.ThroughputRatio != nil {
		rep.Heading("A/A control")
		rep.Para("`%s` is `direct` again, with a replica process of its own, run in the same rounds: throughput %.3f × direct, mean latency %.3f × direct (medians of the per-round ratios; %.0f calls/s, %.1f µs, replica %s µs CPU per call). "+
			"Its distance from 1 is how far two identical configurations differ in this run: on a shared machine each replica process keeps a speed of its own for the whole run, which the interleaved rounds do not cancel. "+
			"Read every ratio above as ± at least this much, and compare several runs before calling a target met or missed by less.",
			control.Name, *control.ThroughputRatio, *control.LatencyRatio, control.ThroughputRPS, control.Mean, ptrNum(control.ReplicaCPUUS))
	}

	var cpu [][]string
	for _, r := range rows {
		if r.Skipped == "" && r.ReplicaCPUUS != nil {
			cpu = append(cpu, []string{r.Name, bench.Num(*r.ReplicaCPUUS, 1), ptrNum(r.ProxyCPUUS)})
		}
	}
	if len(cpu) > 0 {
		rep.Heading("CPU per call")
		rep.Para("CPU time (all threads, from /proc) that the replica process and the proxy process (the balancer for `per-request`) used while the configuration's calls ran, divided by its calls: " +
			"what each hop costs the machine, unaffected by how the calls queued. The balancer's figure includes its background work (health probes, analyzer steps), which is small.")
		rep.Table([]string{"configuration", "replica µs/call", "proxy µs/call"}, cpu)
	}

	judgeOverhead(rep, cfgs, byName)
	if env.ORB == bench.ORBOmniORB {
		judgeOmniORB(rep, cfgs, byName)
	}
	comparePaper(rep, byName)

	rep.Heading("Set-up")
	if env.ORB == bench.ORBOmniORB {
		rep.Para("%s", overheadOmniORBSetUp)
		return rep
	}
	if env.Protocol == bench.ProtocolGIOP {
		rep.Para("%s", overheadGIOPSetUp)
		return rep
	}
	rep.Para("Every configuration has a prime replica process of its own, so that all replicas are equally busy. " +
		"`direct` calls a plain replica; `per-request` is a fulcrum per-request group whose static member is a plain replica, " +
		"and HAProxy (HTTP mode, `option http-keep-alive`, `http-reuse always`) and NGINX (`keepalive 64`, `proxy_http_version 1.1`, one process) proxy to one each, " +
		"so these four differ only by the hop. `per-session` and `on-demand` call replicas registered through the Go monitor library, which reports " +
		"their load every 500 ms; the client uses fulcrum's client library, which is redirected once by the front door and then calls the replica directly. " +
		"Every call is bounded by a 60 s deadline: `http.Client.Timeout` over net/http's own transport for the plain callers, the client library's `Options.Timeout` for the bound ones " +
		"(net/http enforces a Client.Timeout through any other RoundTripper with two goroutines and a timer per call, which would charge the bound callers for the harness). " +
		"`direct-control` is `direct` again with a replica process of its own, an A/A control reported apart from the rows (see above). " +
		"Each configuration keeps one connection (keep-alive) for the whole run; 100 unmeasured calls warm each up. " +
		"The rounds' orders follow a Williams design: over every 2n rounds each configuration runs in each position, and right after each other one, equally often. Generated configs and every process's log are in `logs/`.")
	return rep
}

// judgeOverhead records the targets for the overhead experiment.
func judgeOverhead(rep *bench.Report, cfgs []*overheadConfig, rows map[string]OverheadRow) {
	od := rows[bench.ConfigOnDemand]
	if od.ThroughputRatio != nil {
		rep.Target("on-demand throughput ≥ 0.97 × direct", *od.ThroughputRatio >= 0.97, "median per-round ratio %.3f", *od.ThroughputRatio)
		rep.Target("on-demand mean latency ≤ 1.05 × direct", *od.LatencyRatio <= 1.05, "median per-round ratio %.3f", *od.LatencyRatio)
	}
	// Per-session calls the replica directly, but its binding header lines
	// cost the replica 3–4.6% of the small /prime/1009 call: the target
	// allows 5%. The noise is printed beside it, not judged.
	ps := rows[bench.ConfigPerSession]
	if ps.ThroughputRatio != nil {
		tn, ln, of := overheadNoise(ps, overheadControl(cfgs))
		rep.Target("per-session throughput ≥ 0.95 × direct", *ps.ThroughputRatio >= 0.95,
			"median per-round ratio %.3f, mean latency ratio %.3f; noise ±%.3f (throughput), ±%.3f (latency): %s", *ps.ThroughputRatio, *ps.LatencyRatio, tn, ln, of)
	}
	var pr, hp *overheadConfig
	for _, c := range cfgs {
		switch c.name {
		case bench.ConfigPerRequest:
			pr = c
		case bench.ConfigHAProxy:
			hp = c
		}
	}
	if hp == nil || hp.skipped != "" || len(hp.rounds) == 0 {
		why := "HAProxy did not run"
		if hp != nil && hp.skipped != "" {
			why = hp.skipped
		}
		rep.TargetUnknown("per-request throughput ≥ 1.0 × HAProxy", "%s", why)
		rep.TargetUnknown("per-request p99 ≤ HAProxy p99", "%s", why)
		return
	}
	thr, _ := roundRatios(pr, hp)
	med := stats.Median(thr)
	rep.Target("per-request throughput ≥ 1.0 × HAProxy", med >= 1.0,
		"median per-round ratio %.3f (%.0f vs %.0f calls/s overall)", med, rows[bench.ConfigPerRequest].ThroughputRPS, rows[bench.ConfigHAProxy].ThroughputRPS)
	// The p99 is judged like the throughput: per round, against HAProxy's
	// in the same round, the median of the ratios (a whole-run p99 is
	// set by the machine's worst seconds, which fall on whichever
	// configuration was running then).
	p99 := stats.Median(roundP99Ratios(pr, hp))
	rep.Target("per-request p99 ≤ HAProxy p99", p99 <= 1.0,
		"median per-round p99 ratio %.3f (whole run %.0f µs vs %.0f µs)", p99, rows[bench.ConfigPerRequest].P99, rows[bench.ConfigHAProxy].P99)
}

// roundP99Ratios are a configuration's per-round p99 latencies over
// another's.
func roundP99Ratios(c, base *overheadConfig) []float64 {
	var out []float64
	for r := range min(len(c.rounds), len(base.rounds)) {
		fc, fb := c.rounds[r].Figures(), base.rounds[r].Figures()
		if fb.P99 > 0 {
			out = append(out, fc.P99/fb.P99)
		}
	}
	return out
}

// overheadNoise is how far from 1 a ratio to direct may land by noise
// alone (throughput, mean latency), at least 2%: with the A/A
// control, how far its own median ratios landed from 1 in the same run;
// without, half the 5–95% spread of row's per-round ratios.
func overheadNoise(row OverheadRow, control *OverheadRow) (thr, lat float64, of string) {
	if control != nil && control.ThroughputRatio != nil {
		return max(0.02, abs(*control.ThroughputRatio-1)), max(0.02, abs(*control.LatencyRatio-1)), "the A/A control's distance from 1, at least 0.02"
	}
	tb, lb := row.ThroughputRatioBounds, row.LatencyRatioBounds
	return max(0.02, (tb.Upper-tb.Lower)/2), max(0.02, (lb.Upper-lb.Lower)/2), "half the 5–95% spread of the per-round ratios, at least 0.02"
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// startOverheadGroups starts the balancer of the overhead experiment with
// its per-session, on-demand and per-request groups of protocol proto ("" for
// HTTP), a monitored replica joined to each of the first two, and
// perRequestReplica as the per-request group's static member; it returns once
// every group is ready.
func startOverheadGroups(ctx context.Context, env *bench.Env, proto, perRequestReplica string) (*bench.Balancer, map[string]*bench.Replica, error) {
	bal, err := env.StartBalancer(ctx,
		bench.GroupSpec{Name: bench.ConfigPerSession, Binding: "per-session", Strategy: "round-robin", Protocol: proto},
		bench.GroupSpec{Name: bench.ConfigOnDemand, Binding: "on-demand", Strategy: "least-loaded", Protocol: proto},
		bench.GroupSpec{Name: bench.ConfigPerRequest, Binding: "per-request", Strategy: "round-robin", Protocol: proto, Replicas: []string{perRequestReplica}},
	)
	if err != nil {
		return nil, nil, err
	}
	joined := map[string]*bench.Replica{}
	for _, g := range []string{bench.ConfigPerSession, bench.ConfigOnDemand} {
		r, err := env.StartReplica(ctx, "replica-"+g, &bench.Join{Admin: bal.Admin, Group: g})
		if err != nil {
			return nil, nil, err
		}
		joined[g] = r
		if err := bal.WaitReady(ctx, g, 1, true); err != nil {
			return nil, nil, err
		}
	}
	if err := bal.WaitReady(ctx, bench.ConfigPerRequest, 1, false); err != nil {
		return nil, nil, err
	}
	return bal, joined, nil
}
