package scalability

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

func init() { bench.Register("scalability", func() bench.Experiment { return &Scalability{} }) }

// Scalability is Beekhuis's experiments A and L: (a) a payload sweep,
// request bodies of 24 B to 240 KB echoed by the replica, one caller; (b)
// a load grid, X client processes × Y concurrent callers each, closed
// loop, synchronised start, zero think time, with the response time
// fitted to T = β0 + β1·X + β2·Y + β3·X·Y and checked against Little's
// law.
type Scalability struct {
	// Sizes are the payload sizes in bytes; default Beekhuis's 24, 240,
	// 2400, 24000, 240000.
	Sizes []int
	// PayloadCalls is the number of calls per payload cell; 0: 10,000
	// (2,000 with --quick, 20 with --smoke).
	PayloadCalls int
	// Processes and Callers span the grid; default {1,2,4} × {1,4,16,64}
	// ({1,2} × {1,4} with --smoke).
	Processes, Callers []int
	// Duration of one grid cell; 0: 10s (2s with --quick, 300ms with
	// --smoke).
	Duration time.Duration
}

// The payload sizes of Beekhuis's experiment A.
var defaultSizes = []int{24, 240, 2400, 24000, 240000}

// Name implements Experiment.
func (*Scalability) Name() string { return "scalability" }

// Summary implements Experiment.
func (*Scalability) Summary() string {
	return "Beekhuis 1998, exp. A and L: payload sweep 24 B–240 KB; client processes × callers grid with regression and Little's law"
}

// AddFlags implements FlagAdder.
func (s *Scalability) AddFlags(fs *pflag.FlagSet) {
	fs.IntSliceVar(&s.Sizes, "sizes", nil, "payload sizes in bytes (default 24,240,2400,24000,240000)")
	fs.IntVar(&s.PayloadCalls, "payload-calls", 0, "calls per payload size and configuration (default 10000, --quick 2000, --smoke 20)")
	fs.IntSliceVar(&s.Processes, "processes", nil, "client processes X of the grid (default 1,2,4; --smoke 1,2)")
	fs.IntSliceVar(&s.Callers, "callers", nil, "concurrent callers Y per process (default 1,4,16,64; --smoke 1,4)")
	fs.DurationVar(&s.Duration, "duration", 0, "duration of one grid cell (default 10s, --quick 2s, --smoke 300ms)")
}

// ScalabilityRow is one row of results.json: a payload cell (part
// "payload", size_bytes) or a grid cell (part "grid", processes,
// callers, with Little's law's prediction of the mean latency).
type ScalabilityRow struct {
	Part      string `json:"part"`
	Name      string `json:"name"`
	SizeBytes int    `json:"size_bytes,omitempty"`
	Processes int    `json:"processes,omitempty"`
	Callers   int    `json:"callers,omitempty"`
	bench.Figures
	// LittlePredictedUS is clients ÷ throughput in µs, the mean latency
	// Little's law predicts for a closed loop with no think time;
	// LittleResidual is (measured − predicted) ÷ predicted.
	LittlePredictedUS *float64 `json:"little_predicted_us,omitempty"`
	LittleResidual    *float64 `json:"little_residual,omitempty"`
	// StartLateMS is how late the latest client process was for the
	// synchronised start.
	StartLateMS *float64 `json:"start_late_ms,omitempty"`
	Skipped     string   `json:"skipped,omitempty"`
}

// scalTarget is one configuration of the experiment.
type scalTarget struct {
	name    string
	base    string // URL the calls go to, without the path
	binding bool
	skipped string
	grid    bool // part of the load grid
}

// Check implements Checker.
func (s *Scalability) Check(size bench.Size) error {
	c := *s
	return c.defaults(size)
}

func (s *Scalability) defaults(size bench.Size) error {
	if len(s.Sizes) == 0 {
		s.Sizes = defaultSizes
	}
	if s.PayloadCalls <= 0 {
		s.PayloadCalls = bench.Pick(size, 10_000, 2_000, 20)
	}
	if len(s.Processes) == 0 {
		s.Processes = bench.Pick(size, []int{1, 2, 4}, []int{1, 2, 4}, []int{1, 2})
	}
	if len(s.Callers) == 0 {
		s.Callers = bench.Pick(size, []int{1, 4, 16, 64}, []int{1, 4, 16, 64}, []int{1, 4})
	}
	if s.Duration <= 0 {
		s.Duration = bench.Pick(size, 10*time.Second, 2*time.Second, 300*time.Millisecond)
	}
	for _, v := range s.Sizes {
		if v < 1 || v > 8<<20 {
			return fmt.Errorf("scalability: --sizes %d, must be in [1, %d]", v, 8<<20)
		}
	}
	for _, v := range s.Processes {
		if v < 1 || v > 64 {
			return fmt.Errorf("scalability: --processes %d, must be in [1, 64]", v)
		}
	}
	for _, v := range s.Callers {
		if v < 1 || v > 4096 {
			return fmt.Errorf("scalability: --callers %d, must be in [1, 4096]", v)
		}
	}
	return nil
}

// Run implements Experiment.
func (s *Scalability) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	if err := s.defaults(env.Size); err != nil {
		return nil, err
	}
	targets, err := s.setUp(ctx, env)
	if err != nil {
		return nil, err
	}
	rows, err := s.payload(ctx, env, targets)
	if err != nil {
		return nil, err
	}
	grid, err := s.grid(ctx, env, targets)
	if err != nil {
		return nil, err
	}
	rows = append(rows, grid...)
	fits, fitNotes := regressions(rows, targets)
	if err := s.write(env, rows, targets); err != nil {
		return nil, err
	}
	return &bench.Results{
		Rows:   rows,
		Extra:  map[string]any{"regression": fits},
		Report: s.report(env, rows, targets, fits, fitNotes),
	}, nil
}

// setUp starts a replica per configuration (equally busy, as in the
// overhead experiment), the balancer and the competitors.
func (s *Scalability) setUp(ctx context.Context, env *bench.Env) ([]*scalTarget, error) {
	targets := []*scalTarget{
		{name: bench.ConfigDirect, grid: true},
		{name: bench.ConfigPerRequest, grid: true},
		{name: bench.ConfigOnDemand, binding: true},
		{name: bench.ConfigHAProxy, grid: true, skipped: env.HAProxy.Missing},
		{name: bench.ConfigNGINX, skipped: env.NGINX.Missing},
	}
	plain := map[string]*bench.Replica{}
	for _, t := range targets {
		if t.skipped != "" || t.name == bench.ConfigOnDemand {
			continue
		}
		r, err := env.StartReplica(ctx, "replica-"+t.name, nil)
		if err != nil {
			return nil, err
		}
		plain[t.name] = r
	}
	bal, err := env.StartBalancer(ctx,
		bench.GroupSpec{Name: bench.ConfigPerRequest, Binding: "per-request", Strategy: "round-robin", Replicas: []string{plain[bench.ConfigPerRequest].URL}},
		bench.GroupSpec{Name: bench.ConfigOnDemand, Binding: "on-demand", Strategy: "least-loaded"},
	)
	if err != nil {
		return nil, err
	}
	if _, err := env.StartReplica(ctx, "replica-"+bench.ConfigOnDemand, &bench.Join{Admin: bal.Admin, Group: bench.ConfigOnDemand}); err != nil {
		return nil, err
	}
	if err := bal.WaitReady(ctx, bench.ConfigOnDemand, 1, true); err != nil {
		return nil, err
	}
	if err := bal.WaitReady(ctx, bench.ConfigPerRequest, 1, false); err != nil {
		return nil, err
	}
	for _, t := range targets {
		if t.skipped != "" {
			continue
		}
		switch t.name {
		case bench.ConfigDirect:
			t.base = plain[bench.ConfigDirect].URL
		case bench.ConfigPerRequest, bench.ConfigOnDemand:
			t.base = bal.FrontDoor(t.name)
		case bench.ConfigHAProxy:
			px, err := env.StartHAProxy(ctx, []string{plain[bench.ConfigHAProxy].URL})
			if err != nil {
				return nil, err
			}
			t.base = px.URL
		case bench.ConfigNGINX:
			px, err := env.StartNGINX(ctx, []string{plain[bench.ConfigNGINX].URL})
			if err != nil {
				return nil, err
			}
			t.base = px.URL
		}
	}
	return targets, nil
}

// payload runs part (a): every size through every configuration, one
// closed-loop caller, the configurations' order rotating from one size to
// the next.
func (s *Scalability) payload(ctx context.Context, env *bench.Env, targets []*scalTarget) ([]ScalabilityRow, error) {
	env.Logf("scalability: payload sweep, %d calls per size and configuration", s.PayloadCalls)
	var rows []ScalabilityRow
	for si, size := range s.Sizes {
		body := bench.Payload(size)
		line := fmt.Sprintf("payload %d B:", size)
		cell := make([]ScalabilityRow, len(targets))
		for i := range targets {
			k := (i + si) % len(targets)
			t := targets[k]
			row := ScalabilityRow{Part: "payload", Name: t.name, SizeBytes: size, Skipped: t.skipped}
			if t.skipped == "" {
				res, err := bench.RunLoad(ctx, bench.Endpoint{URL: t.base + "/echo", Method: http.MethodPost, Body: body, Binding: t.binding}, 1, s.PayloadCalls, 0)
				if err != nil {
					return nil, fmt.Errorf("scalability: payload %d B through %s: %w", size, t.name, err)
				}
				row.Figures = res.Figures()
				line += fmt.Sprintf(" %s %.0fµs", t.name, row.Mean)
			}
			cell[k] = row
		}
		rows = append(rows, cell...)
		env.Logf("%s", line)
	}
	return rows, nil
}

// grid runs part (b): for every X × Y, the grid's configurations one
// after the other (order rotating from cell to cell), each with X client
// processes of Y callers starting together.
func (s *Scalability) grid(ctx context.Context, env *bench.Env, targets []*scalTarget) ([]ScalabilityRow, error) {
	var gridTargets []*scalTarget
	for _, t := range targets {
		if t.grid {
			gridTargets = append(gridTargets, t)
		}
	}
	env.Logf("scalability: load grid, processes %v × callers %v, %s per cell", s.Processes, s.Callers, s.Duration)
	var rows []ScalabilityRow
	n := 0
	for _, x := range s.Processes {
		for _, y := range s.Callers {
			line := fmt.Sprintf("grid %d×%d:", x, y)
			cell := make([]ScalabilityRow, len(gridTargets))
			for i := range gridTargets {
				k := (i + n) % len(gridTargets)
				t := gridTargets[k]
				row := ScalabilityRow{Part: "grid", Name: t.name, Processes: x, Callers: y, Skipped: t.skipped}
				if t.skipped == "" {
					ep := bench.Endpoint{URL: t.base + "/prime/" + strconv.Itoa(bench.PrimeN), Binding: t.binding}
					res, late, err := env.RunClients(ctx, ep, x, y, s.Duration)
					if err != nil {
						return nil, fmt.Errorf("scalability: grid %d×%d through %s: %w", x, y, t.name, err)
					}
					row.Figures = res.Figures()
					pred, resid := stats.LittlesLaw(float64(x*y), row.ThroughputRPS, row.Mean)
					lateMS := float64(late) / float64(time.Millisecond)
					row.LittlePredictedUS, row.LittleResidual, row.StartLateMS = &pred, &resid, &lateMS
					line += fmt.Sprintf(" %s %.0f/s %.0fµs", t.name, row.ThroughputRPS, row.Mean)
				}
				cell[k] = row
			}
			n++
			rows = append(rows, cell...)
			env.Logf("%s", line)
		}
	}
	return rows, nil
}

// regressions fits T = β0 + β1·X + β2·Y + β3·X·Y (T the mean latency in
// µs) per grid configuration. notes say why a configuration has no fit.
func regressions(rows []ScalabilityRow, targets []*scalTarget) (map[string]stats.Fit, map[string]string) {
	fits, notes := map[string]stats.Fit{}, map[string]string{}
	for _, t := range targets {
		if !t.grid {
			continue
		}
		if t.skipped != "" {
			notes[t.name] = t.skipped
			continue
		}
		var obs []stats.Observation
		for _, r := range rows {
			if r.Part == "grid" && r.Name == t.name && r.Count > 0 {
				obs = append(obs, stats.Observation{X: float64(r.Processes), Y: float64(r.Callers), T: r.Mean})
			}
		}
		f, err := stats.OLS(obs)
		if err != nil {
			notes[t.name] = err.Error()
			continue
		}
		fits[t.name] = f
	}
	return fits, notes
}

// write writes the CSV files and the plots.
func (s *Scalability) write(env *bench.Env, rows []ScalabilityRow, targets []*scalTarget) error {
	var payload, grid [][]string
	for _, r := range rows {
		switch r.Part {
		case "payload":
			payload = append(payload, append([]string{r.Name, strconv.Itoa(r.SizeBytes)}, append(r.Figures.CSV(), r.Skipped)...))
		case "grid":
			extra := []string{"", "", "", r.Skipped}
			if r.LittlePredictedUS != nil {
				extra = []string{bench.Num(*r.LittlePredictedUS, 1), bench.Num(*r.LittleResidual, 4), bench.Num(*r.StartLateMS, 1), r.Skipped}
			}
			grid = append(grid, append([]string{r.Name, strconv.Itoa(r.Processes), strconv.Itoa(r.Callers)}, append(r.Figures.CSV(), extra...)...))
		}
	}
	if err := env.WriteCSV("scalability-payload.csv", append(append([]string{"name", "size_bytes"}, bench.FiguresHeader...), "skipped"), payload); err != nil {
		return err
	}
	if err := env.WriteCSV("scalability-grid.csv", append(append([]string{"name", "processes", "callers"}, bench.FiguresHeader...),
		"little_predicted_us", "little_residual", "start_late_ms", "skipped"), grid); err != nil {
		return err
	}

	var payloadLines, gridLines, thrLines []bench.Line
	for _, t := range targets {
		if t.skipped != "" {
			continue
		}
		l := bench.Line{Name: t.name}
		for _, r := range rows {
			if r.Part == "payload" && r.Name == t.name && r.Count > 0 {
				l.X, l.Y = append(l.X, float64(r.SizeBytes)), append(l.Y, r.Mean)
				l.Lower, l.Upper = append(l.Lower, r.P5), append(l.Upper, r.P95)
			}
		}
		payloadLines = append(payloadLines, l)
		if !t.grid {
			continue
		}
		for _, x := range s.Processes {
			lat := bench.Line{Name: fmt.Sprintf("%s, %d process(es)", t.name, x)}
			thr := bench.Line{Name: lat.Name}
			for _, r := range rows {
				if r.Part == "grid" && r.Name == t.name && r.Processes == x && r.Count > 0 {
					clients := float64(r.Processes * r.Callers)
					lat.X, lat.Y = append(lat.X, clients), append(lat.Y, r.Mean)
					lat.Lower, lat.Upper = append(lat.Lower, r.P5), append(lat.Upper, r.P95)
					thr.X, thr.Y = append(thr.X, clients), append(thr.Y, r.ThroughputRPS)
				}
			}
			gridLines, thrLines = append(gridLines, lat), append(thrLines, thr)
		}
	}
	if err := env.LineChart("scalability-payload.png", bench.Axes{Title: "Payload sweep (Beekhuis 1998, exp. A): mean with 5%/95% bounds", X: "request body (bytes, echoed)", Y: "response time (µs)", LogX: true}, payloadLines); err != nil {
		return err
	}
	if err := env.LineChart("scalability-grid.png", bench.Axes{Title: "Load grid (Beekhuis 1998, exp. L): mean with 5%/95% bounds", X: "concurrent clients (processes × callers)", Y: "response time (µs)", LogX: true}, gridLines); err != nil {
		return err
	}
	return env.LineChart("scalability-throughput.png", bench.Axes{Title: "Load grid: throughput", X: "concurrent clients (processes × callers)", Y: "calls/s", LogX: true}, thrLines)
}

// bounded is "mean [p5, p95]" in µs.
func bounded(r ScalabilityRow) string {
	if r.Skipped != "" {
		return "skipped"
	}
	return fmt.Sprintf("%.0f [%.0f, %.0f]", r.Mean, r.P5, r.P95)
}

func (s *Scalability) report(env *bench.Env, rows []ScalabilityRow, targets []*scalTarget, fits map[string]stats.Fit, notes map[string]string) *bench.Report {
	rep := bench.NewReport("fulcrum bench scalability")
	rep.Para("Beekhuis, \"Comparative Performance Evaluation of CORBA and DCOM\" (1998), §4.3, experiments A and L, on loopback. Response times in µs, measured by the clients from sending a call to reading the whole answer, " +
		"as the mean with the 5%% lower and 95%% upper bounds of all calls (Beekhuis's empirical 90%% interval). " +
		"Every configuration has a prime replica process of its own; `per-request` is a fulcrum per-request group, `on-demand` an on-demand group whose replica reports through the Go monitor library and whose client uses fulcrum's client library; HAProxy and NGINX are configured as in the overhead experiment (configs in `logs/`).")

	rep.Heading("(a) Payload sweep")
	rep.Para("One closed-loop caller, `POST /echo` with a body of each size (the replica answers the same bytes), %d calls per size and configuration; the configurations' order rotates from one size to the next.", s.PayloadCalls)
	header := []string{"size (bytes)"}
	for _, t := range targets {
		header = append(header, t.name)
	}
	var lat, thr [][]string
	for _, size := range s.Sizes {
		l, th := []string{strconv.Itoa(size)}, []string{strconv.Itoa(size)}
		for _, t := range targets {
			for _, r := range rows {
				if r.Part == "payload" && r.Name == t.name && r.SizeBytes == size {
					l = append(l, bounded(r))
					if r.Skipped != "" {
						th = append(th, "skipped")
					} else {
						th = append(th, bench.Num(r.ThroughputRPS, 0))
					}
				}
			}
		}
		lat, thr = append(lat, l), append(thr, th)
	}
	rep.Para("Response time, mean [5%%, 95%%] (µs):")
	rep.Table(header, lat)
	rep.Para("Throughput (calls/s):")
	rep.Table(header, thr)
	rep.Image("payload sweep", "scalability-payload.png")

	rep.Heading("(b) Load grid")
	rep.Para("X client processes (`fulcrum bench-client`) × Y concurrent closed-loop callers each, zero think time, `GET /prime/%d`, every process starting its calls at one wall-clock time passed on its command line (Beekhuis's synchronisation service), %s per cell; the configurations of a cell run one after the other, their order rotating from cell to cell. "+
		"All processes share this machine's %d CPUs with the replica and the balancer: beyond a few callers the clients' own CPU time is part of what is measured (Beekhuis's thesis §3.4.4).",
		bench.PrimeN, s.Duration, env.Machine.CPUs)
	for _, t := range targets {
		if !t.grid {
			continue
		}
		var table [][]string
		for _, r := range rows {
			if r.Part != "grid" || r.Name != t.name {
				continue
			}
			if r.Skipped != "" {
				table = append(table, []string{strconv.Itoa(r.Processes), strconv.Itoa(r.Callers), "skipped: " + r.Skipped, "", "", "", "", "", ""})
				continue
			}
			table = append(table, []string{
				strconv.Itoa(r.Processes), strconv.Itoa(r.Callers), strconv.FormatInt(r.Count, 10), bench.Num(r.ThroughputRPS, 0),
				bounded(r), bench.Num(r.P99, 0), bench.Num(*r.LittlePredictedUS, 0), fmt.Sprintf("%+.1f%%", *r.LittleResidual*100), strconv.FormatInt(r.Errors, 10),
			})
		}
		rep.Para("**%s**", t.name)
		rep.Table([]string{"X", "Y", "calls", "calls/s", "mean [5%, 95%] µs", "p99 µs", "Little: X·Y ÷ calls/s (µs)", "measured vs Little", "errors"}, table)
	}
	rep.Image("load grid", "scalability-grid.png")
	rep.Image("throughput", "scalability-throughput.png")

	rep.Heading("Regression")
	rep.Para("Least-squares fit of the mean response time T (µs) to T = β0 + β1·X + β2·Y + β3·X·Y over the grid's cells (Beekhuis's thesis §4.3.5), per configuration:")
	var ft [][]string
	for _, t := range targets {
		if !t.grid {
			continue
		}
		if f, ok := fits[t.name]; ok {
			ft = append(ft, []string{t.name, bench.Num(f.Beta0, 2), bench.Num(f.Beta1, 2), bench.Num(f.Beta2, 2), bench.Num(f.Beta3, 2), bench.Num(f.R2, 4)})
		} else {
			ft = append(ft, []string{t.name, "no fit: " + notes[t.name], "", "", "", ""})
		}
	}
	rep.Table([]string{"configuration", "β0", "β1 (X)", "β2 (Y)", "β3 (X·Y)", "R²"}, ft)

	rep.Heading("Little's law")
	rep.Para("In a closed loop with no think time, N = X·Y callers are always in a call, so the mean response time must be N ÷ throughput (L = λ·W). " +
		"A cell far from it means the callers were not all busy — started late, or starved of CPU between calls — or a measurement is wrong.")
	for _, t := range targets {
		if !t.grid || t.skipped != "" {
			continue
		}
		worst, where := 0.0, ""
		for _, r := range rows {
			if r.Part == "grid" && r.Name == t.name && r.LittleResidual != nil && math.Abs(*r.LittleResidual) >= math.Abs(worst) {
				worst, where = *r.LittleResidual, fmt.Sprintf("%d×%d", r.Processes, r.Callers)
			}
		}
		rep.Target(fmt.Sprintf("Little's law holds for %s (every cell within 10%%)", t.name), math.Abs(worst) <= 0.10,
			"largest deviation %+.1f%% at %s", worst*100, where)
	}
	return rep
}
