package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
)

func init() { bench.Register("cluster", func() bench.Experiment { return &Cluster{} }) }

// prefix is the etcd prefix of the experiment's instances (its etcd is
// its own).
const prefix = "/fulcrum-bench/"

// Cluster is "fulcrum bench cluster" (see the package comment).
type Cluster struct {
	// Registrations timed for propagation; 0: 200 (20 with --smoke).
	Registrations int
	// Calls per overhead configuration and the rounds they are split
	// into; 0: 60,000 in 30 (12,000 in 10 with --quick, 300 in 5 with
	// --smoke).
	Calls, Rounds int
	// Replicas simulated for fan-in, in Groups groups; 0: 1,000 in 10
	// (30 in 3 with --smoke).
	Replicas, Groups int
	// Window is each fan-in measurement's length; 0: 30s (10s with
	// --quick, 2s with --smoke).
	Window time.Duration
	// EffDuration is each effectiveness run's length; 0: 60s (20s with
	// --quick, 2s with --smoke). EffReplicas are its replicas; 0: 4 (2
	// with --smoke).
	EffDuration time.Duration
	EffReplicas int
}

// Name implements Experiment.
func (*Cluster) Name() string { return "cluster" }

// Summary implements Experiment.
func (*Cluster) Summary() string {
	return "three instances on a three-member etcd: propagation, per-request overhead against one instance, equilibrium with clients spread over the instances, report fan-in and etcd writes, instance and leader failover"
}

// ByNameOnly implements bench.ByNameOnly: "bench all" leaves cluster out,
// since it needs etcd installed.
func (*Cluster) ByNameOnly() bool { return true }

// AddFlags implements FlagAdder.
func (c *Cluster) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Registrations, "registrations", 0, "registrations timed for propagation (default 200, --smoke 20)")
	fs.IntVar(&c.Calls, "calls", 0, "calls per overhead configuration (default 60000, --quick 12000, --smoke 300)")
	fs.IntVar(&c.Rounds, "rounds", 0, "interleaved overhead rounds, at least 5 (default 30, --quick 10, --smoke 5)")
	fs.IntVar(&c.Replicas, "replicas", 0, "simulated replicas reporting in the fan-in (default 1000, --smoke 30)")
	fs.IntVar(&c.Groups, "groups", 0, "groups the simulated replicas are spread over (default 10, --smoke 3)")
	fs.DurationVar(&c.Window, "window", 0, "length of each fan-in measurement (default 30s, --quick 10s, --smoke 2s)")
	fs.DurationVar(&c.EffDuration, "eff-duration", 0, "length of each effectiveness run, one instance and three (default 60s, --quick 20s, --smoke 2s)")
	fs.IntVar(&c.EffReplicas, "eff-replicas", 0, "replicas of each effectiveness run (default 4, --smoke 2)")
}

// settings are the run's sizes.
type settings struct {
	Registrations int      `json:"registrations"`
	Calls         int      `json:"calls"`
	Rounds        int      `json:"rounds"`
	Replicas      int      `json:"replicas"`
	Groups        int      `json:"groups"`
	WindowS       float64  `json:"window_s"`
	Intervals     []string `json:"report_intervals"`
	SessionTTL    string   `json:"session_ttl"`
	// The effectiveness phase: replicas, the clients' rates in start
	// order, each run's length.
	EffReplicas  int           `json:"eff_replicas"`
	EffRates     []float64     `json:"eff_rates"`
	EffDurationS float64       `json:"eff_duration_s"`
	window       time.Duration // Window
	intervals    []time.Duration
	effDuration  time.Duration
}

func (c *Cluster) settings(size bench.Size) settings {
	or := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	s := settings{
		Registrations: or(c.Registrations, bench.Pick(size, 200, 200, 20)),
		Calls:         or(c.Calls, bench.Pick(size, 60_000, 12_000, 300)),
		Rounds:        or(c.Rounds, bench.Pick(size, 30, 10, 5)),
		Replicas:      or(c.Replicas, bench.Pick(size, 1000, 1000, 30)),
		Groups:        or(c.Groups, bench.Pick(size, 10, 10, 3)),
		window:        c.Window,
		intervals:     []time.Duration{500 * time.Millisecond, time.Second},
		SessionTTL:    sessionTTL.String(),
		EffReplicas:   or(c.EffReplicas, bench.Pick(size, 4, 4, 2)),
		EffRates:      effectiveness.Interleave(effectiveness.DefaultRates()),
		effDuration:   c.EffDuration,
	}
	if s.effDuration <= 0 {
		s.effDuration = bench.Pick(size, 60*time.Second, 20*time.Second, 2*time.Second)
	}
	s.EffDurationS = s.effDuration.Seconds()
	if s.window <= 0 {
		s.window = bench.Pick(size, 30*time.Second, 10*time.Second, 2*time.Second)
	}
	s.WindowS = s.window.Seconds()
	for _, d := range s.intervals {
		s.Intervals = append(s.Intervals, d.String())
	}
	return s
}

// Check implements Checker.
func (c *Cluster) Check(size bench.Size) error {
	for _, f := range []struct {
		flag string
		v    int
	}{{"registrations", c.Registrations}, {"calls", c.Calls}, {"rounds", c.Rounds}, {"replicas", c.Replicas}, {"groups", c.Groups}, {"eff-replicas", c.EffReplicas}} {
		if f.v < 0 {
			return fmt.Errorf("cluster: --%s %d, must be positive (or 0 for the default)", f.flag, f.v)
		}
	}
	s := c.settings(size)
	switch {
	case s.Rounds < 5:
		return fmt.Errorf("cluster: --rounds %d, must be at least 5", s.Rounds)
	case s.Calls < s.Rounds*overheadCallers:
		return fmt.Errorf("cluster: --calls %d, must be at least %d (%d callers in each of %d rounds)", s.Calls, s.Rounds*overheadCallers, overheadCallers, s.Rounds)
	case s.Replicas > 20_000:
		return fmt.Errorf("cluster: --replicas %d, must be at most 20000", s.Replicas)
	case s.Groups > s.Replicas:
		return fmt.Errorf("cluster: --groups %d, must be in [1, --replicas (%d)]", s.Groups, s.Replicas)
	case c.Window < 0:
		return fmt.Errorf("cluster: --window %s, must be positive (or 0 for the default)", c.Window)
	case s.window < time.Second:
		return fmt.Errorf("cluster: --window %s, must be at least 1s", s.window)
	case c.EffDuration < 0:
		return fmt.Errorf("cluster: --eff-duration %s, must be positive (or 0 for the default)", c.EffDuration)
	case s.effDuration < time.Second:
		return fmt.Errorf("cluster: --eff-duration %s, must be at least 1s", s.effDuration)
	case s.EffReplicas > 64:
		return fmt.Errorf("cluster: --eff-replicas %d, must be in [1, 64]", s.EffReplicas)
	}
	return nil
}

// Run implements Experiment.
func (c *Cluster) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	if err := c.Check(env.Size); err != nil {
		return nil, err
	}
	s := c.settings(env.Size)
	etcd, err := startEtcd(ctx, env, 3)
	if err != nil {
		return nil, err
	}
	ins, err := startInstances(ctx, env, etcd, prefix)
	if err != nil {
		return nil, err
	}

	prop, err := measurePropagation(ctx, ins, s.Registrations)
	if err != nil {
		return nil, err
	}
	env.Logf("propagation over %d registrations: p50 %.2f ms, p99 %.2f ms", prop.Registrations, prop.P50MS, prop.P99MS)

	rows, control, err := measureOverhead(ctx, env, ins, s.Calls, s.Rounds)
	if err != nil {
		return nil, err
	}

	eff, err := measureEffectiveness(ctx, env, ins, s.EffReplicas, s.EffRates, s.effDuration)
	if err != nil {
		return nil, err
	}

	fan, err := measureFanIn(ctx, env, ins, etcd, s.Replicas, s.Groups, s.window, s.intervals)
	if err != nil {
		return nil, err
	}

	fail, err := measureInstanceFailover(ctx, env, ins)
	if err != nil {
		return nil, err
	}
	env.Logf("instance failover: first success after the kill p50 %.1f ms, max %.1f ms; %d of %d per-request calls failed, %d of %d bound on-demand calls",
		fail.FirstSuccessP50MS, fail.FirstSuccessMaxMS, fail.PerRequestFailed, fail.PerRequestCalls, fail.OnDemandFailed, fail.OnDemandCalls)

	// On B and C: the instance failover killed A.
	leader, err := measureLeaderFailover(ctx, env, ins[1:])
	if err != nil {
		return nil, err
	}
	if leader.Measured {
		env.Logf("leader failover: kill -9 of %s → advisory with term %d (was %d) after %.0f ms", leader.Killed, leader.NewTerm, leader.OldTerm, leader.NewTermAdvisoryMS)
	} else {
		env.Logf("leader failover: %s", leader.Reason)
	}

	if err := writeCSV(env, rows, control, eff, fan); err != nil {
		return nil, err
	}
	return &bench.Results{
		Rows:   rows,
		Report: clusterReport(s, prop, rows, control, eff, fan, leader, fail),
		Extra: map[string]any{
			"settings": s, "control": control, "propagation": prop, "fan_in": fan,
			"instance_failover": fail, "leader_failover": leader, "effectiveness": eff,
		},
	}, nil
}
