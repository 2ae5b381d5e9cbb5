package effectiveness

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// EffectivenessName is the effectiveness experiment's name.
const EffectivenessName = "effectiveness"

func init() {
	bench.Register(EffectivenessName, func() bench.Experiment { return newEffectiveness() })
}

// The defaults of the TAO paper §4.3: four replicas, four clients at 100
// calls/s and four at 50, strategies side by side.
var (
	defaultEffRates = []float64{100, 100, 100, 100, 50, 50, 50, 50}
	defaultEffRuns  = []string{"round-robin/per-session", "least-loaded/on-demand", "minimum-dispersion/on-demand", "power-of-two/per-request"}
)

const (
	// effGroup is the group every run balances.
	effGroup = "prime"
	// effClientGap separates the clients' starts, in their interleaved
	// order, so that the order is the same in every run (round-robin's
	// assignment depends on it) while all start within about a second.
	effClientGap = 100 * time.Millisecond
	// effWarmup is the time between starting the clients' goroutines and
	// the first client's first call.
	effWarmup = 200 * time.Millisecond
)

// Effectiveness is the TAO paper's effectiveness experiment (§4.3, Fig. 15 and
// 16): N replicas of the prime service behind a fresh balancer per run,
// open-loop clients at fixed rates, and for each strategy/binding pair the
// replicas' served rates each second, the time to equilibrium, the
// dispersion at steady state beside the best any assignment of whole
// clients can reach, the rebinds after equilibrium and the clients'
// latencies.
type Effectiveness struct {
	// Replicas is the number of replicas (default 4).
	Replicas int
	// Rates are the clients' call rates in calls/s (default
	// 100,100,100,100,50,50,50,50). Clients start in interleaved order:
	// the first of the first half, the first of the second half, the
	// second of the first half, ... (100,50,100,50,... by default).
	Rates []float64
	// Runs are the strategy/binding pairs to run, in order.
	Runs []string
	// Duration is each run's length; 0: by size (60s full, 20s quick, 3s
	// smoke).
	Duration time.Duration
}

func newEffectiveness() *Effectiveness {
	return &Effectiveness{Replicas: 4, Rates: slices.Clone(defaultEffRates), Runs: slices.Clone(defaultEffRuns)}
}

// Name implements Experiment.
func (x *Effectiveness) Name() string { return EffectivenessName }

// Summary implements Experiment.
func (x *Effectiveness) Summary() string {
	return "Othman et al. 2001, Fig. 15/16: per-replica load over time, time to equilibrium and steady dispersion per strategy"
}

// OverGIOP implements bench.OverGIOP: effectiveness also runs over GIOP.
func (*Effectiveness) OverGIOP() bool { return true }

// AddFlags implements FlagAdder.
func (x *Effectiveness) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&x.Replicas, "replicas", x.Replicas, "number of prime replicas")
	fs.Var((*bench.RateList)(&x.Rates), "rates", "the clients' open-loop call rates in calls/s, comma-separated (clients start interleaved: 1st, n/2+1st, 2nd, ...)")
	fs.StringSliceVar(&x.Runs, "runs", x.Runs, "strategy/binding pairs to run, in order")
	fs.DurationVar(&x.Duration, "duration", x.Duration, "length of each run (default 60s; 20s with --quick, 3s with --smoke)")
}

// effRun is one strategy/binding pair.
type effRun struct {
	Strategy, Binding string
}

func (r effRun) String() string { return r.Strategy + "/" + r.Binding }

// slug names the run's files.
func (r effRun) slug() string { return r.Strategy + "-" + r.Binding }

// validate checks the settings and returns the runs.
func (x *Effectiveness) validate() ([]effRun, error) {
	if x.Replicas < 1 || x.Replicas > 64 {
		return nil, &protocol.FieldError{Field: "--replicas", Value: x.Replicas, Allowed: "must be in [1,64]"}
	}
	if len(x.Rates) == 0 || len(x.Rates) > 256 {
		return nil, &protocol.FieldError{Field: "--rates", Value: len(x.Rates), Allowed: "1 to 256 clients"}
	}
	for _, r := range x.Rates {
		if !(r > 0 && r <= 10000) {
			return nil, &protocol.FieldError{Field: "--rates", Value: r, Allowed: "each rate must be in (0, 10000] calls/s"}
		}
	}
	if x.Duration < 0 {
		return nil, &protocol.FieldError{Field: "--duration", Value: x.Duration.String(), Allowed: "must not be negative"}
	}
	if len(x.Runs) == 0 {
		return nil, &protocol.FieldError{Field: "--runs", Value: "", Allowed: "at least one strategy/binding pair"}
	}
	var runs []effRun
	for _, s := range x.Runs {
		name, binding, ok := strings.Cut(strings.TrimSpace(s), "/")
		if !ok {
			return nil, &protocol.FieldError{Field: "--runs", Value: s, Allowed: "strategy/binding, e.g. least-loaded/on-demand"}
		}
		if _, known := strategy.Lookup(name); !known {
			return nil, &protocol.FieldError{Field: "--runs", Value: s, Allowed: "a strategy among " + strings.Join(strategy.Names(), ", ")}
		}
		switch binding {
		case protocol.PerSession, protocol.OnDemand, protocol.PerRequest:
		default:
			return nil, &protocol.FieldError{Field: "--runs", Value: s, Allowed: "binding per-session, on-demand or per-request"}
		}
		r := effRun{Strategy: name, Binding: binding}
		if slices.Contains(runs, r) {
			return nil, &protocol.FieldError{Field: "--runs", Value: s, Allowed: "each pair once"}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// interleave returns rates in the clients' start order: the first half
// and the second half alternately.
func interleave(rates []float64) []float64 {
	half := (len(rates) + 1) / 2
	out := make([]float64, 0, len(rates))
	for i := 0; i < half; i++ {
		out = append(out, rates[i])
		if j := half + i; j < len(rates) {
			out = append(out, rates[j])
		}
	}
	return out
}

// EffRow is one strategy/binding run in results.json.
type EffRow struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	Binding  string `json:"binding"`
	// Replicas are the replicas' ids in registration order, the order of
	// ReplicaRates and of the CSV's columns.
	Replicas []string `json:"replicas"`
	// DurationS is the run's length in whole seconds.
	DurationS int `json:"duration_s"`
	// EquilibriumS is the start of the first 5 s window with every
	// replica within ±10% of the mean; null if none.
	EquilibriumS *int `json:"equilibrium_s"`
	// SteadyFromS is where the steady window starts: EquilibriumS, or
	// the middle of the run.
	SteadyFromS int `json:"steady_from_s"`
	// SteadyCV is the coefficient of variation of ReplicaRates, the
	// replicas' mean rates over the steady window.
	SteadyCV     float64   `json:"steady_cv"`
	ReplicaRates []float64 `json:"replica_rates"`
	// OptimalCV is the lowest CV any assignment of the whole clients to
	// the replicas reaches; OptimalExact whether it is proven.
	OptimalCV    float64 `json:"optimal_cv"`
	OptimalExact bool    `json:"optimal_exact"`
	// BestSpread is the least largest deviation from the mean any
	// assignment reaches. When it exceeds ±10%, the targets use
	// TargetBand = BestSpread + 0.02 for equilibrium instead, and
	// TargetEquilibriumS is the equilibrium under it.
	BestSpread         float64 `json:"best_spread"`
	TargetBand         float64 `json:"target_band"`
	TargetEquilibriumS *int    `json:"target_equilibrium_s"`
	// RebindsPerS is the clients' binding changes per second over the
	// steady window (0 for per-request clients, which hold no binding).
	RebindsPerS float64 `json:"rebinds_per_s"`
	// Target is this run's verdict: met, missed, "no target" or "not
	// judged" (a run too short), with the reasons in TargetDetail.
	Target       string `json:"target"`
	TargetDetail string `json:"target_detail"`
	// The latency figures count from each call's intended send time (no
	// coordinated omission), so they include how late the load generator
	// sent it: SendLagP50 and SendLagP99 (µs), mostly its timers'
	// granularity.
	bench.Figures
	SendLagP50 float64 `json:"send_lag_p50_us"`
	SendLagP99 float64 `json:"send_lag_p99_us"`
}

// Run implements Experiment.
func (x *Effectiveness) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	runs, err := x.validate()
	if err != nil {
		return nil, err
	}
	dur := x.Duration
	if dur == 0 {
		dur = bench.Pick(env.Size, 60*time.Second, 20*time.Second, 3*time.Second)
	}
	dur = dur.Truncate(time.Second)
	if dur < time.Second {
		return nil, &protocol.FieldError{Field: "--duration", Value: x.Duration.String(), Allowed: "at least 1s"}
	}
	order := interleave(x.Rates)
	mix := newEffMix(order, x.Replicas)
	env.Logf("effectiveness: %d replicas, clients at %s calls/s, %s per run; best reachable CV %.4f, spread ±%.1f%%",
		x.Replicas, joinRates(order), dur, mix.optimalCV, mix.bestSpread*100)

	var rows []EffRow
	for _, r := range runs {
		env.Logf("effectiveness: %s", r)
		tr, rec, lag, err := x.runOne(ctx, env, r, order, dur)
		if err != nil {
			return nil, fmt.Errorf("bench: effectiveness %s: %w", r, err)
		}
		row := mix.row(r, tr, rec, dur, env.Size)
		lags := lag.Summary()
		row.SendLagP50, row.SendLagP99 = lags.P50, lags.P99
		env.Logf("effectiveness: %s: equilibrium %s, steady CV %.4f (optimal %.4f), rebinds %.2f/s, rates %s, %d failed; target %s",
			r, fmtEq(row.EquilibriumS), row.SteadyCV, row.OptimalCV, row.RebindsPerS, joinRates(row.ReplicaRates), row.Errors, row.Target)
		if err := writeEffRun(env, r, tr, analyseTrace(tr, stats.DefaultBand, stats.DefaultWindow)); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	rep := effReport(rows, mix, x.Replicas, dur, env.Size)
	settings := mix.settings(x.Replicas, dur)
	switch {
	case env.ORB == bench.ORBOmniORB:
		effOmniORBNote(rep)
	case env.Protocol == bench.ProtocolGIOP:
		effGIOPNote(rep)
	}
	if env.Protocol == bench.ProtocolGIOP {
		settings["protocol"], settings["orb"] = env.Protocol, env.ORB
	}
	return &bench.Results{
		Rows:   rows,
		Extra:  map[string]any{"settings": settings},
		Report: rep,
	}, nil
}

// runOne runs one strategy/binding pair on a fresh balancer and fresh
// replicas, and returns what the clients saw.
func (x *Effectiveness) runOne(ctx context.Context, env *bench.Env, r effRun, order []float64, dur time.Duration) (effTrace, *stats.Recorder, *stats.Recorder, error) {
	if env.ORB == bench.ORBOmniORB {
		return x.runOneOmniORB(ctx, env, r, order, dur)
	}
	b, err := env.StartBalancer(ctx, bench.GroupSpec{Name: effGroup, Binding: r.Binding, Strategy: r.Strategy, Protocol: env.Protocol})
	if err != nil {
		return effTrace{}, nil, nil, err
	}
	defer b.Proc.Stop(3 * time.Second)
	for i := range x.Replicas {
		rep, err := env.StartReplica(ctx, fmt.Sprintf("%s-replica-%d", r.slug(), i+1), &bench.Join{Admin: b.Admin, Group: effGroup})
		if err != nil {
			return effTrace{}, nil, nil, err
		}
		defer rep.Proc.Stop(3 * time.Second)
	}
	if err := b.WaitReady(ctx, effGroup, x.Replicas, true); err != nil {
		return effTrace{}, nil, nil, err
	}
	st, err := b.Group(ctx, effGroup)
	if err != nil {
		return effTrace{}, nil, nil, err
	}
	var ids []string
	for _, rep := range st.Replicas {
		ids = append(ids, rep.ID)
	}

	clients := make([]*pacedClient, len(order))
	for i, rate := range order {
		if env.Protocol == bench.ProtocolGIOP {
			c, closeORB, err := newEffGIOPClient(b.Reference(effGroup), r.Binding, rate, giopAddrs(st))
			if err != nil {
				return effTrace{}, nil, nil, err
			}
			defer closeORB()
			clients[i] = c
			continue
		}
		c, closeIdle := newEffClient([]string{b.FrontDoor(effGroup)}, r.Binding, rate)
		defer closeIdle()
		clients[i] = c
	}
	var sample func(*serveLog) func()
	if env.Protocol == bench.ProtocolGIOP && r.Binding == protocol.PerRequest {
		sample = func(log *serveLog) func() { return sampleProxied(ctx, b, log) }
	}
	log := driveClients(ctx, clients, dur, sample)
	if err := ctx.Err(); err != nil {
		return effTrace{}, nil, nil, err
	}
	if env.Protocol == bench.ProtocolGIOP && r.Binding == protocol.PerRequest {
		log.dropServed(effViaFrontDoor)
	}
	tr, stray := log.snapshot(ids, int(dur/time.Second))
	if stray > 0 {
		env.Logf("effectiveness: %s: %d calls answered by replicas not in the group's list", r, stray)
	}
	if errs := log.errorKinds(); errs != "" {
		env.Logf("effectiveness: %s: failed calls: %s", r, errs)
	}
	rec, lag := mergedRecorders(clients)
	return tr, rec, lag, nil
}

// writeEffRun writes a run's per-second rates (CSV) and its plot (PNG).
func writeEffRun(env *bench.Env, r effRun, tr effTrace, f effFigures) error {
	return writeRates(env, "rates-"+r.slug(), fmt.Sprintf("%s: calls/s served by each replica", r), tr, f)
}

// writeRates writes tr's per-second rates to name.csv and their plot,
// titled title, to name.png.
func writeRates(env *bench.Env, name, title string, tr effTrace, f effFigures) error {
	table := rateTable(tr)
	if err := env.WriteCSV(name+".csv", table[0], table[1:]); err != nil {
		return err
	}
	p, err := ratePlot(title, tr, f)
	if err != nil {
		return err
	}
	return env.SavePlot(p, name+".png")
}

// joinRates shows rates as 150/150/148/152: whole calls/s, one decimal
// below 10.
func joinRates(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = bench.Num(r, 0)
		if r < 10 && r != math.Trunc(r) {
			parts[i] = bench.Num(r, 1)
		}
	}
	return strings.Join(parts, "/")
}

func fmtEq(s *int) string {
	if s == nil {
		return "never"
	}
	return fmt.Sprintf("%d s", *s)
}
