package remoting

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Cases of the remoting experiment (--case).
const (
	// RemotingCaseScheduling is Chen et al.'s §V scheduling experiment:
	// single-call getPrimeCount only (the default).
	RemotingCaseScheduling = "scheduling"
	// RemotingCaseStateful mixes singleton and client-activated objects
	// with the single-call calls (remoting_stateful_mix.go).
	RemotingCaseStateful = "stateful"
)

// Defaults of the stateful case.
const (
	// defaultStatefulShare is the share of a client's calls made on
	// stateful objects, half singleton, half client-activated.
	defaultStatefulShare = 0.5
	// defaultSingletons is how many singletons the clients share.
	defaultSingletons = 4
	// statefulTimeout is the client-activated rule's idle timeout: longer
	// than any run, so that no object expires during one.
	statefulTimeout = 5 * time.Minute
)

// defaultStatefulStrategies are the strategies the stateful case runs
// when --strategies is left at the scheduling case's default: the
// single-call calls are balanced by them, the stateful ones stay on
// their objects' replicas whatever the strategy.
var (
	defaultStatefulStrategies = []string{strategy.LeastLoadedName, strategy.LeastConnectionsName, strategy.RoundRobinName, strategy.RandomName}
	smokeStatefulStrategies   = []string{strategy.LeastLoadedName, strategy.RandomName}
)

// statefulAffinity is the group's affinity block in the stateful case
// (GroupSpec.Extra: YAML under the group, indented by four spaces): each
// client-activated object stays on the replica whose 201 created it,
// each singleton on its rendezvous replica.
func statefulAffinity() string {
	return "    affinity:\n" +
		"      - kind: " + protocol.AffinityClientActivated + "\n" +
		"        match: /objects/{id}\n" +
		"        timeout: " + statefulTimeout.String() + "\n" +
		"      - kind: " + protocol.AffinitySingleton + "\n" +
		"        match: /singletons/{name}\n"
}

// statefulStrategies are the strategies of a stateful run.
func (x *Remoting) statefulStrategies(size bench.Size) []string {
	if slices.Equal(x.Strategies, defaultRemotingStrategies) {
		return slices.Clone(bench.Pick(size, defaultStatefulStrategies, defaultStatefulStrategies, smokeStatefulStrategies))
	}
	return x.Strategies
}

// checkStateful checks the stateful case's own settings.
func (x *Remoting) checkStateful() error {
	if !(x.StatefulShare >= 0 && x.StatefulShare <= 1) {
		return &protocol.FieldError{Field: "--stateful-share", Value: x.StatefulShare, Allowed: "must be in [0, 1]"}
	}
	if x.Singletons < 1 || x.Singletons > 10_000 {
		return &protocol.FieldError{Field: "--singletons", Value: x.Singletons, Allowed: "must be in [1, 10000]"}
	}
	return nil
}

// KindFigures are one kind's calls in a stateful row.
type KindFigures struct {
	Calls         int64   `json:"calls"`
	LatencyMeanMS float64 `json:"latency_mean_ms"`
	LatencyP50MS  float64 `json:"latency_p50_ms"`
	LatencyP99MS  float64 `json:"latency_p99_ms"`
}

func kindFigures(r *stats.Recorder) KindFigures {
	s := r.Summary()
	return KindFigures{Calls: s.Count, LatencyMeanMS: s.Mean / 1000, LatencyP50MS: s.P50 / 1000, LatencyP99MS: s.P99 / 1000}
}

// RemotingStatefulRow is one replicas × utilisation × strategy run of
// the stateful case (results.json rows with --case stateful).
type RemotingStatefulRow struct {
	Replicas    int     `json:"replicas"`
	Utilization float64 `json:"utilization"`
	Strategy    string  `json:"strategy"`
	Clients     int     `json:"clients"`
	GapMS       float64 `json:"gap_ms"`
	OfferedRPS  float64 `json:"offered_rps"`
	// StatefulShare is the share of the calls made on stateful objects;
	// Objects the client-activated objects (one per client), Singletons
	// the singletons the clients share.
	StatefulShare float64 `json:"stateful_share"`
	Objects       int     `json:"objects"`
	Singletons    int     `json:"singletons"`
	// The answered calls' response times, from the intended send time:
	// all of them, and by kind (single-call, singleton,
	// client-activated).
	Calls         int64                  `json:"calls"`
	LatencyMeanMS float64                `json:"latency_mean_ms"`
	LatencyP50MS  float64                `json:"latency_p50_ms"`
	LatencyP99MS  float64                `json:"latency_p99_ms"`
	Kinds         map[string]KindFigures `json:"kinds"`
	// ReductionVsRandom is 1 − mean/random's mean in the same replicas
	// and utilisation; null when random answered nothing.
	ReductionVsRandom *float64 `json:"reduction_vs_random"`
	// Errors counts the calls without a 200 answer, FirstError one.
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Misrouted counts the stateful calls that did not reach their
	// object's replica: answered by another (its counts tell), or refused
	// there as an unknown object (404). 0 is the case's target.
	Misrouted int64 `json:"misrouted"`
	// CountMismatches counts the objects and singletons whose replicas'
	// own counts (GET /objects of each replica) differ from the calls
	// answered for them, or that more than one replica holds; 0 is the
	// target. FirstMismatch describes one.
	CountMismatches int    `json:"count_mismatches"`
	FirstMismatch   string `json:"first_mismatch,omitempty"`
	// MeasuredUtilization is the replicas' CPU time over the offer window
	// as a share of the group's quota.
	MeasuredUtilization float64 `json:"measured_utilization"`
}

// runStatefulCase runs the stateful case: per group size, a group set up
// and measured as in the scheduling case (with the affinity rules), then
// per utilisation one run per strategy on the same calls, each checked
// against the replicas' own counts.
func (x *Remoting) runStatefulCase(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	// The objects live in fulcrum backend prime; NGINX's replica has none.
	x.Replica = RemotingReplicaGo
	s := x.sizes(env.Size)
	if x.Utilizations == nil {
		s.utils = bench.Pick(env.Size, []float64{0.5, 0.9}, []float64{0.5, 0.9}, []float64{0.5})
	}
	strategies := x.statefulStrategies(env.Size)
	env.Logf("remoting, stateful case: replicas %v, utilisations %v, strategies %v, %d calls per client, %.0f%% of them on stateful objects (%d singletons, one client-activated object per client)",
		s.replicas, s.utils, strategies, s.calls, x.StatefulShare*100, x.Singletons)
	var rows []RemotingStatefulRow
	for _, n := range s.replicas {
		rs, err := x.runStatefulGroup(ctx, env, n, s, strategies)
		if err != nil {
			return nil, fmt.Errorf("bench: remoting, stateful case, %d replicas: %w", n, err)
		}
		rows = append(rows, rs...)
	}
	fillStatefulReductions(rows)
	if err := writeStatefulCSV(env, rows); err != nil {
		return nil, err
	}
	return &bench.Results{
		Rows: rows,
		Extra: map[string]any{"settings": map[string]any{
			"case": RemotingCaseStateful, "x_mean": x.XMean, "group_cpu": x.CPU, "calls_per_client": s.calls,
			"stateful_share": x.StatefulShare, "singletons": x.Singletons, "client_activated_timeout": statefulTimeout.String(),
			"report_interval_ms": x.ReportInterval.Milliseconds(), "binding": "per-request", "replica": x.Replica,
		}},
		Report: statefulReport(rows, x.StatefulShare),
	}, nil
}

// runStatefulGroup runs every utilisation × strategy on n replicas.
func (x *Remoting) runStatefulGroup(ctx context.Context, env *bench.Env, n int, s remotingSizes, strategies []string) ([]RemotingStatefulRow, error) {
	cl, g, capacity, _, err := x.setUpGroup(ctx, env, n)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	est := x.quotaPerX(capacity)
	env.Logf("remoting, stateful case: %d replicas: saturated, they answer %.0f calls/s", n, g.CapacityRPS)
	hc, closeIdle := remotingHTTP()
	defer closeIdle()
	var rows []RemotingStatefulRow
	for ui, u := range s.utils {
		seed := uint64(n)<<32 | uint64(ui)<<24 | 1<<20
		plan, gap := remotingPlan(seed, g.Clients, s.calls, x.XMean, u, x.CPU, est)
		if gap <= 0 {
			return nil, fmt.Errorf("at %.0f%%: no gap from a CPU estimate of %g ns per unit of X", u*100, est)
		}
		clients := statefulMix(seed, plan, x.StatefulShare, x.Singletons)
		window := gap * time.Duration(s.calls)
		line := fmt.Sprintf("remoting, stateful case: %d replicas, %.0f%% (%.0f calls/s):", n, u*100, float64(g.Clients)/gap.Seconds())
		for i := range strategies {
			name := strategies[i]
			if err := cl.useStrategy(ctx, name, x.QueueSlots, x.queueLead(), x.ReportInterval); err != nil {
				return nil, err
			}
			u0, err := cl.cpuUsage()
			if err != nil {
				return nil, err
			}
			tag := fmt.Sprintf("n%d-u%d-%s", n, ui, strings.ReplaceAll(name, "+", "-"))
			res, err := runStatefulSample(ctx, hc, cl.frontDoor, tag, clients, func() time.Time { return time.Now().Add(50 * time.Millisecond) })
			if err != nil {
				return nil, fmt.Errorf("%s at %.0f%%: %w", name, u*100, err)
			}
			u1, err := cl.cpuUsage()
			if err != nil {
				return nil, err
			}
			counts, err := objectCounts(ctx, hc, cl.bases)
			if err != nil {
				return nil, err
			}
			row := statefulRow(n, u, name, g.Clients, gap, x, res, counts)
			row.MeasuredUtilization = remotingUtilization(u1-u0, window, x.CPU)
			rows = append(rows, row)
			line += fmt.Sprintf(" %s %.2f ms (%d misrouted, %d count mismatches%s)", name, row.LatencyMeanMS, row.Misrouted, row.CountMismatches, failedNote(row.Errors-res.refused))
		}
		env.Logf("%s", line)
	}
	return rows, nil
}

// statefulRow makes the row of one run.
func statefulRow(n int, u float64, name string, clients int, gap time.Duration, x *Remoting, res statefulResult, counts []backend.ObjectCounts) RemotingStatefulRow {
	sum := res.all.Summary()
	r := RemotingStatefulRow{
		Replicas: n, Utilization: u, Strategy: name, Clients: clients, GapMS: ms(gap), OfferedRPS: float64(clients) / gap.Seconds(),
		StatefulShare: x.StatefulShare, Objects: clients, Singletons: x.Singletons,
		Calls: sum.Count, LatencyMeanMS: sum.Mean / 1000, LatencyP50MS: sum.P50 / 1000, LatencyP99MS: sum.P99 / 1000,
		Kinds:  map[string]KindFigures{},
		Errors: res.errors, FirstError: res.firstError,
		Misrouted: res.answers.misrouted() + res.refused,
	}
	for k := range numKinds {
		r.Kinds[k.String()] = kindFigures(res.kinds[k])
	}
	r.CountMismatches, r.FirstMismatch = res.answers.countMismatches(counts)
	return r
}

// fillStatefulReductions sets each row's reduction against random's mean
// in the same replicas and utilisation.
func fillStatefulReductions(rows []RemotingStatefulRow) {
	for i := range rows {
		rows[i].ReductionVsRandom = nil
		for _, b := range rows {
			if b.Strategy == remotingRandom && b.Replicas == rows[i].Replicas && b.Utilization == rows[i].Utilization && b.Calls > 0 && rows[i].Calls > 0 {
				v := 1 - rows[i].LatencyMeanMS/b.LatencyMeanMS
				rows[i].ReductionVsRandom = &v
			}
		}
	}
}

// writeStatefulCSV writes remoting-stateful.csv.
func writeStatefulCSV(env *bench.Env, rows []RemotingStatefulRow) error {
	header := []string{"replicas", "utilization", "strategy", "clients", "offered_rps", "stateful_share", "calls", "latency_mean_ms", "latency_p99_ms",
		"single_call_mean_ms", "singleton_mean_ms", "client_activated_mean_ms", "reduction_vs_random", "errors", "misrouted", "count_mismatches", "measured_utilization"}
	var table [][]string
	for _, r := range rows {
		table = append(table, []string{
			strconv.Itoa(r.Replicas), bench.Num(r.Utilization, 2), r.Strategy, strconv.Itoa(r.Clients), bench.Num(r.OfferedRPS, 1), bench.Num(r.StatefulShare, 2),
			strconv.FormatInt(r.Calls, 10), bench.Num(r.LatencyMeanMS, 3), bench.Num(r.LatencyP99MS, 3),
			bench.Num(r.Kinds["single-call"].LatencyMeanMS, 3), bench.Num(r.Kinds["singleton"].LatencyMeanMS, 3), bench.Num(r.Kinds["client-activated"].LatencyMeanMS, 3),
			fmtReduction(r.ReductionVsRandom, 4), strconv.FormatInt(r.Errors, 10), strconv.FormatInt(r.Misrouted, 10), strconv.Itoa(r.CountMismatches), bench.Num(r.MeasuredUtilization, 3),
		})
	}
	return env.WriteCSV("remoting-stateful.csv", header, table)
}

// statefulReport is the stateful case's report.md: a table per run and
// the target that every stateful call reached its object's replica.
func statefulReport(rows []RemotingStatefulRow, share float64) *bench.Report {
	rep := bench.NewReport("remoting, stateful case: singleton and client-activated objects mixed with single-call calls (Chen et al. §III, §V)")
	rep.Para("Each client makes %.0f%% of its calls on stateful objects — half on its own client-activated object (created by POST /objects; the group's client-activated rule learns the 201's Location), half on singletons shared by all clients (kept on one replica by rendezvous hashing) — and the rest as single-call getPrimeCount(X), balanced by the strategy. The replicas count each object's calls: a call that reaches another replica than its object's is answered there (a singleton) or refused (404, a client-activated object), and the counts tell.", share*100)
	var table [][]string
	var misrouted, mismatches int64
	var calls int64
	for _, r := range rows {
		k := r.Kinds
		table = append(table, []string{
			strconv.Itoa(r.Replicas), fmt.Sprintf("%.0f%%", r.Utilization*100), r.Strategy,
			fmt.Sprintf("%.2f / %.2f", r.LatencyMeanMS, r.LatencyP99MS),
			fmt.Sprintf("%.2f (%d)", k["single-call"].LatencyMeanMS, k["single-call"].Calls),
			fmt.Sprintf("%.2f (%d)", k["singleton"].LatencyMeanMS, k["singleton"].Calls),
			fmt.Sprintf("%.2f (%d)", k["client-activated"].LatencyMeanMS, k["client-activated"].Calls),
			fmtReduction(r.ReductionVsRandom, 3), strconv.FormatInt(r.Errors, 10), strconv.FormatInt(r.Misrouted, 10), strconv.Itoa(r.CountMismatches),
		})
		misrouted += r.Misrouted
		mismatches += int64(r.CountMismatches)
		calls += r.Kinds["singleton"].Calls + r.Kinds["client-activated"].Calls
	}
	rep.Table([]string{"replicas", "load", "strategy", "mean / p99 ms", "single-call mean ms (calls)", "singleton mean ms (calls)", "client-activated mean ms (calls)", "reduction vs random", "errors", "misrouted", "count mismatches"}, table)
	rep.Target("every stateful call reached its object's replica", misrouted == 0 && mismatches == 0,
		"%d stateful calls answered; %d misrouted, %d objects whose replicas' counts differ from the answers", calls, misrouted, mismatches)
	return rep
}

// groupExtra is the group's YAML beyond GroupSpec's fields: the
// affinity rules in the stateful case, nothing otherwise.
func (x *Remoting) groupExtra() string {
	if x.Case == RemotingCaseStateful {
		return statefulAffinity()
	}
	return ""
}
