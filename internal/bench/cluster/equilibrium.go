package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The effectiveness phase: the effectiveness experiment's run (its
// clients, schedule, equilibrium and CV; package effectiveness) with
// on-demand binding and least-loaded — the pair of its headline figure
// and docs/strategies.md's recommendation for bound clients — once with
// every client at the group leader's front door (one instance) and once
// with the clients spread over the three instances' front doors (each
// client given all three, starting at a different one). A fresh group and
// fresh replicas per run, the replicas' monitors given every admin URL.
const (
	effStrategy = strategy.LeastLoadedName
	effBinding  = protocol.OnDemand
	// effEqTargetS: equilibrium with three instances still ≤ 10 s
	// (issue 23).
	effEqTargetS = 10
	// noticeWait bounds the wait after a run for the bound notices still
	// on their way (a notice's POST is bounded to 2 s).
	noticeWait = 2 * time.Second
)

// EffRun is one run of the effectiveness phase in results.json.
type EffRun struct {
	// Config is one-instance or three-instances.
	Config string `json:"config"`
	Group  string `json:"group"`
	// Leader is the group's analyzer leader during the run.
	Leader string `json:"leader"`
	// ClientsAt counts the clients by the instance whose front door they
	// start at (and go through while it answers).
	ClientsAt map[string]int `json:"clients_at"`
	// Run is the effectiveness experiment's row: equilibrium_s,
	// steady_cv, optimal_cv, rebinds_per_s (steady window), the rates,
	// the latencies and its verdict.
	Run effectiveness.EffRow `json:"run"`
	// ClientRebinds is the clients' binding changes over the whole run.
	ClientRebinds int `json:"client_rebinds"`
	// Instances is what each instance saw of the group's bindings.
	Instances []EffInstance `json:"instances"`
	// RebindsAtNonLeaders counts the rebinds at the front doors of
	// instances that do not lead the group; LookedUp the bindings there
	// by a move looked up in etcd; ReachedLeader the looked-up bindings
	// the leader applied from a bound notice ("elsewhere" bindings at
	// the leader matched by client and replica).
	RebindsAtNonLeaders uint64 `json:"rebinds_at_non_leaders"`
	LookedUp            int    `json:"looked_up_at_non_leaders"`
	ReachedLeader       int    `json:"reached_leader"`
	// NoticeP50MS and NoticeMaxMS are, over the matched pairs, from the
	// looked-up binding's event at a non-leader to the leader's
	// "elsewhere" event (the bound notice's delay); nil with none.
	NoticeP50MS *float64 `json:"notice_p50_ms"`
	NoticeMaxMS *float64 `json:"notice_max_ms"`
	// BoundPushFailures is the non-leaders' failed bound notices
	// (fulcrum_cluster_push_failures_total{kind="bound"}, summed).
	BoundPushFailures float64 `json:"bound_push_failures"`
}

// EffInstance is one instance's view of a run's group.
type EffInstance struct {
	Name   string `json:"name"`
	Leader bool   `json:"leader"`
	// Bindings and Rebinds are its front door's counters, summed over
	// the replicas (GET /v1/groups/{name}).
	Bindings uint64 `json:"bindings"`
	Rebinds  uint64 `json:"rebinds"`
	// Planned, LookedUp and Elsewhere count its "binding" events: a
	// planned move completed at its own front door from its snapshot, one
	// completed there by a move looked up in etcd, and (at the leader)
	// one another instance told it of.
	Planned   int `json:"planned_bindings"`
	LookedUp  int `json:"looked_up_bindings"`
	Elsewhere int `json:"elsewhere_bindings"`
}

// measureEffectiveness runs the phase's two runs, each dur long, with
// replicas replicas and clients at rates (start order).
func measureEffectiveness(ctx context.Context, env *bench.Env, ins []*instance, replicas int, rates []float64, dur time.Duration) ([]EffRun, error) {
	env.Logf("effectiveness: %s/%s, %d replicas, clients at %s calls/s, %s per run", effStrategy, effBinding, replicas, effectiveness.FormatRates(rates), dur)
	var out []EffRun
	for _, cfg := range []string{cfgOne, cfgThree} {
		run, res, err := effectivenessRun(ctx, env, ins, cfg, replicas, rates, dur)
		if err != nil {
			return nil, fmt.Errorf("cluster: effectiveness %s: %w", cfg, err)
		}
		if err := res.WriteRates(env, "rates-"+cfg, fmt.Sprintf("%s/%s, %s: calls/s served by each replica", effStrategy, effBinding, cfg)); err != nil {
			return nil, err
		}
		row := run.Run
		env.Logf("effectiveness %s (leader %s): equilibrium %s, steady CV %.4f (optimal %.4f), rebinds %d (%.2f/s steady), rates %s, %d failed; at non-leaders %d rebinds, %d looked up, %d reached the leader",
			cfg, run.Leader, eqText(row.EquilibriumS), row.SteadyCV, row.OptimalCV, run.ClientRebinds, row.RebindsPerS,
			effectiveness.FormatRates(row.ReplicaRates), row.Errors, run.RebindsAtNonLeaders, run.LookedUp, run.ReachedLeader)
		if res.Failures != "" {
			env.Logf("effectiveness %s: failed calls: %s", cfg, res.Failures)
		}
		if res.Stray > 0 {
			env.Logf("effectiveness %s: %d calls answered by replicas not in the group's list", cfg, res.Stray)
		}
		out = append(out, run)
	}
	return out, nil
}

// effectivenessRun sets up a fresh group and replicas and runs the
// clients as cfg places them.
func effectivenessRun(ctx context.Context, env *bench.Env, ins []*instance, cfg string, replicas int, rates []float64, dur time.Duration) (EffRun, effectiveness.HTTPResult, error) {
	group := "eff-" + cfg
	doors, err := createGroup(ctx, ins[0], ins, group, map[string]any{"binding": effBinding, "strategy": effStrategy})
	if err != nil {
		return EffRun{}, effectiveness.HTTPResult{}, err
	}
	var admins []string
	for _, in := range ins {
		admins = append(admins, in.admin)
	}
	for i := range replicas {
		rep, err := env.StartReplica(ctx, fmt.Sprintf("replica-%s-%d", group, i+1),
			&bench.Join{Admin: strings.Join(admins, ","), Group: group, Token: adminToken})
		if err != nil {
			return EffRun{}, effectiveness.HTTPResult{}, err
		}
		defer rep.Proc.Stop(3 * time.Second)
	}
	leader, ok := waitLeader(ctx, ins[0], group, 4*sessionTTL)
	if !ok {
		return EffRun{}, effectiveness.HTTPResult{}, fmt.Errorf("no leader of group %s within %s", group, 4*sessionTTL)
	}
	lead := slices.IndexFunc(ins, func(in *instance) bool { return in.name == leader })
	if lead < 0 {
		return EffRun{}, effectiveness.HTTPResult{}, fmt.Errorf("the leader of %s is %q, not an instance of the bench", group, leader)
	}
	// Every instance picks from loads: the leader's own, the others'
	// pushed to them.
	for _, in := range ins {
		if err := waitReported(ctx, in, group, replicas); err != nil {
			return EffRun{}, effectiveness.HTTPResult{}, err
		}
	}
	st, err := ins[0].group(ctx, group)
	if err != nil {
		return EffRun{}, effectiveness.HTTPResult{}, err
	}
	var ids []string
	for _, r := range st.Replicas {
		ids = append(ids, r.ID)
	}

	run := EffRun{Config: cfg, Group: group, Leader: leader, ClientsAt: map[string]int{}}
	// doorsOf is client i's front doors, the first the one it starts at.
	doorsOf := func(i int) []string { return []string{doors[lead]} }
	if cfg == cfgThree {
		doorsOf = func(i int) []string {
			k := i % len(doors)
			return append(slices.Clone(doors[k:]), doors[:k]...)
		}
	}
	for i := range rates {
		first := slices.Index(doors, doorsOf(i)[0])
		run.ClientsAt[ins[first].name]++
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	tallies := make([]*bindingTally, len(ins))
	for i, in := range ins {
		if tallies[i], err = watchBindings(watchCtx, in, group); err != nil {
			return EffRun{}, effectiveness.HTTPResult{}, err
		}
	}
	res, err := effectiveness.HTTPRun{
		Strategy: effStrategy, Binding: effBinding, Rates: rates, Doors: doorsOf, Replicas: ids, Duration: dur,
	}.Measure(ctx, env.Size)
	if err != nil {
		return EffRun{}, res, err
	}
	// The last bound notices may still be on their way to the leader: wait
	// for as many "elsewhere" bindings there as looked-up ones elsewhere,
	// at most a notice's timeout.
	waitFor(ctx, noticeWait, func() bool {
		looked := 0
		for i, t := range tallies {
			if i != lead {
				looked += t.count(func(ev bindingEvent) bool { return ev.LookedUp })
			}
		}
		return tallies[lead].count(func(ev bindingEvent) bool { return ev.Elsewhere }) >= looked
	})
	stopWatch()
	events := make([][]bindingEvent, len(tallies))
	for i, t := range tallies {
		events[i] = t.wait()
	}
	run.Run, run.ClientRebinds = res.Row, res.Rebinds
	if err := run.tally(ctx, ins, lead, events); err != nil {
		return EffRun{}, res, err
	}
	return run, res, nil
}

// tally fills in what the instances saw: their counters, their binding
// events and the bound notices' delays.
func (r *EffRun) tally(ctx context.Context, ins []*instance, lead int, events [][]bindingEvent) error {
	var delays []float64
	elsewhere := slices.Clone(events[lead])
	for i, in := range ins {
		st, err := in.group(ctx, r.Group)
		if err != nil {
			return err
		}
		ei := EffInstance{Name: in.name, Leader: i == lead}
		for _, rep := range st.Replicas {
			ei.Bindings += rep.Counters.Bindings
			ei.Rebinds += rep.Counters.Rebinds
		}
		for _, ev := range events[i] {
			switch {
			case ev.LookedUp:
				ei.LookedUp++
			case ev.Elsewhere:
				ei.Elsewhere++
			default:
				ei.Planned++
			}
		}
		if i != lead {
			r.RebindsAtNonLeaders += ei.Rebinds
			r.LookedUp += ei.LookedUp
			for _, ev := range events[i] {
				if !ev.LookedUp {
					continue
				}
				// The leader's first "elsewhere" event for the same
				// client and replica at or after this one.
				k := slices.IndexFunc(elsewhere, func(e bindingEvent) bool {
					return e.Elsewhere && e.Client == ev.Client && e.Replica == ev.Replica && !e.Time.Before(ev.Time)
				})
				if k < 0 {
					continue
				}
				r.ReachedLeader++
				delays = append(delays, float64(elsewhere[k].Time.Sub(ev.Time))/float64(time.Millisecond))
				elsewhere[k].Elsewhere = false // matched once
			}
			text, err := scrape(ctx, in.hc, in.admin+"/metrics", adminToken)
			if err != nil {
				return err
			}
			v, _, err := sumLabelled(text, "fulcrum_cluster_push_failures_total", `kind="bound"`)
			if err != nil {
				return err
			}
			r.BoundPushFailures += v
		}
		r.Instances = append(r.Instances, ei)
	}
	if len(delays) > 0 {
		p50, most := stats.Median(delays), slices.Max(delays)
		r.NoticeP50MS, r.NoticeMaxMS = &p50, &most
	}
	return nil
}

// waitReported waits until group has n active replicas with a load at in
// (the leader's own reports, or the view it pushed).
func waitReported(ctx context.Context, in *instance, group string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		st, err := in.group(ctx, group)
		ready := 0
		for _, r := range st.Replicas {
			if r.State == "active" && r.Load != nil {
				ready++
			}
		}
		if err == nil && ready >= n {
			return nil
		}
		if !pause(ctx, 20*time.Millisecond) {
			return fmt.Errorf("cluster: group %s has %d of %d replicas active and reported at %s (%v)", group, ready, n, in.name, err)
		}
	}
}

func eqText(s *int) string {
	if s == nil {
		return "never"
	}
	return fmt.Sprintf("%d s", *s)
}

// effTarget judges the three-instance run against issue 23's "equilibrium
// still ≤ 10 s": met, missed, or not judged (a run shorter than 20 s).
func effTarget(runs []EffRun) (status bench.TargetStatus, detail string) {
	var one, three *EffRun
	for i := range runs {
		switch runs[i].Config {
		case cfgOne:
			one = &runs[i]
		case cfgThree:
			three = &runs[i]
		}
	}
	if three == nil {
		return bench.Unknown, "not measured"
	}
	row := three.Run
	eq := row.TargetEquilibriumS
	detail = fmt.Sprintf("%s/%s, clients spread over the three front doors: equilibrium %s", effStrategy, effBinding, eqText(eq))
	if row.TargetBand != stats.DefaultBand {
		detail += fmt.Sprintf(" (±%.0f%%: the mix cannot do ±10%%)", row.TargetBand*100)
	}
	detail += fmt.Sprintf(", steady CV %.4f (optimal %.4f)", row.SteadyCV, row.OptimalCV)
	if one != nil {
		detail += fmt.Sprintf("; one instance: equilibrium %s, steady CV %.4f", eqText(one.Run.TargetEquilibriumS), one.Run.SteadyCV)
	}
	if row.DurationS < 2*effEqTargetS {
		return bench.Unknown, fmt.Sprintf("not judged: a %d s run is too short (at least %d s); %s", row.DurationS, 2*effEqTargetS, detail)
	}
	if eq != nil && *eq <= effEqTargetS {
		return bench.Met, detail
	}
	return bench.Missed, detail
}
