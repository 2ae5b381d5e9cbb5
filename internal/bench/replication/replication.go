package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

func init() { bench.Register("replication", func() bench.Experiment { return &Replication{} }) }

// Replication is "fulcrum bench replication" (see the package comment).
type Replication struct {
	// Invocations per client per point, of which the first Discard are
	// left out; 0: 2,500 and 100 (500 and 50 with --quick, 60 and 10 with
	// --smoke).
	Invocations, Discard int
	// Clients and Replicas are the largest counts measured; 0: 5 and 4.
	Clients, Replicas int
	// FaultInvocations per fault run, the fault at the middle one, Runs
	// per fault point; 0: 500 and 10 (500 and 3 with --quick, 40 and 1
	// with --smoke).
	FaultInvocations, Runs int
	// Throughput is how long the 8 concurrent clients run; 0: 10s (3s
	// with --quick, 1s with --smoke).
	Throughput time.Duration
	// FailpointBinary is a fulcrum binary built with failpoints; empty:
	// no fault injection (its targets are reported as not measured).
	FailpointBinary string
	// Testbed runs each replica (its counter and its agent) and the plain
	// counter in a testbed replica of 0.25 cores (testbed.go; root):
	// the RTT growth from 2 to 4 replicas is measured there. The
	// relay topologies and fault injection are loopback only.
	Testbed bool
}

// Name implements Experiment.
func (*Replication) Name() string { return "replication" }

// Summary implements Experiment.
func (*Replication) Summary() string {
	return "MEAD: RTT of a replicated counter for 1–5 clients × 2–4 replicas, split into client→bridge, ordering and replicas, beside direct and per-request calls and MEAD's relay topologies (replicated callers: a deduplicating callee sees each call once); ordered requests/s; fault injection with --failpoint-binary"
}

// ByNameOnly implements bench.ByNameOnly: "bench all" leaves replication
// out (it is run by name, with or without a failpoint binary).
func (*Replication) ByNameOnly() bool { return true }

// AddFlags implements FlagAdder.
func (r *Replication) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&r.Invocations, "invocations", 0, "calls per client per point (default 2500, --quick 500, --smoke 60)")
	fs.IntVar(&r.Discard, "discard", 0, "first calls of each client left out (default 100, --quick 50, --smoke 10)")
	fs.IntVar(&r.Clients, "clients", 0, "largest number of clients (default 5)")
	fs.IntVar(&r.Replicas, "replicas", 0, "largest number of replicas, from 2 (default 4)")
	fs.IntVar(&r.FaultInvocations, "fault-invocations", 0, "calls per fault run, the fault at the middle one (default 500, --smoke 40)")
	fs.IntVar(&r.Runs, "runs", 0, "fault runs per injection point (default 10, --quick 3, --smoke 1)")
	fs.DurationVar(&r.Throughput, "throughput", 0, "length of the 8-client throughput run (default 10s, --quick 3s, --smoke 1s)")
	fs.StringVar(&r.FailpointBinary, "failpoint-binary", "", "a fulcrum binary built with failpoints (docs/testing.md); empty: no fault injection")
	fs.BoolVar(&r.Testbed, "testbed", false, "run each replica (counter and agent) and the plain counter in a 0.25-core testbed replica (needs root, docs/testbed.md) to measure the RTT growth from 2 to 4 replicas; the relay topologies and fault injection are not run")
}

// settings are the run's sizes.
type settings struct {
	Invocations      int     `json:"invocations"`
	Discard          int     `json:"discard"`
	Clients          int     `json:"clients"`
	Replicas         int     `json:"replicas"`
	FaultInvocations int     `json:"fault_invocations"`
	Runs             int     `json:"runs"`
	ThroughputS      float64 `json:"throughput_s"`
	ThroughputConc   int     `json:"throughput_clients"`
	throughput       time.Duration
}

func (r *Replication) settings(size bench.Size) settings {
	or := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	s := settings{
		Invocations:      or(r.Invocations, bench.Pick(size, 2500, 500, 60)),
		Discard:          or(r.Discard, bench.Pick(size, 100, 50, 10)),
		Clients:          or(r.Clients, 5),
		Replicas:         or(r.Replicas, 4),
		FaultInvocations: or(r.FaultInvocations, bench.Pick(size, 500, 500, 40)),
		Runs:             or(r.Runs, bench.Pick(size, 10, 3, 1)),
		ThroughputConc:   8,
		throughput:       r.Throughput,
	}
	if s.throughput <= 0 {
		s.throughput = bench.Pick(size, 10*time.Second, 3*time.Second, time.Second)
	}
	s.ThroughputS = s.throughput.Seconds()
	return s
}

// Check implements Checker.
func (r *Replication) Check(size bench.Size) error {
	for _, f := range []struct {
		flag string
		v    int
	}{{"invocations", r.Invocations}, {"discard", r.Discard}, {"clients", r.Clients}, {"replicas", r.Replicas}, {"fault-invocations", r.FaultInvocations}, {"runs", r.Runs}} {
		if f.v < 0 {
			return fmt.Errorf("replication: --%s %d, must be positive (or 0 for the default)", f.flag, f.v)
		}
	}
	s := r.settings(size)
	switch {
	case s.Discard >= s.Invocations:
		return fmt.Errorf("replication: --discard %d, must be below --invocations (%d)", s.Discard, s.Invocations)
	case s.Clients > 64:
		return fmt.Errorf("replication: --clients %d, must be in [1, 64]", s.Clients)
	case s.Replicas < 2 || s.Replicas > 16:
		return fmt.Errorf("replication: --replicas %d, must be in [2, 16]", s.Replicas)
	case s.FaultInvocations < 4:
		return fmt.Errorf("replication: --fault-invocations %d, must be at least 4", s.FaultInvocations)
	case r.Throughput < 0:
		return fmt.Errorf("replication: --throughput %s, must be positive (or 0 for the default)", r.Throughput)
	case r.Testbed && r.FailpointBinary != "":
		return fmt.Errorf("replication: --failpoint-binary %s with --testbed: fault injection runs on loopback only, drop one of them", r.FailpointBinary)
	}
	return nil
}

// Run implements Experiment.
func (r *Replication) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	if err := r.Check(env.Size); err != nil {
		return nil, err
	}
	s := r.settings(env.Size)
	if r.FailpointBinary != "" {
		if err := failpoint.CheckBinary(r.FailpointBinary); err != nil {
			return nil, fmt.Errorf("replication: --failpoint-binary: %w", err)
		}
	}
	set, err := start(ctx, env, env.Binary, 2, s.Replicas, r.Testbed)
	if err != nil {
		return nil, err
	}
	defer set.stop()

	var rows []row
	var distinct int64
	var callers callersCheck
	var tp throughput
	for n := 2; n <= s.Replicas; n++ {
		if n > len(set.live()) {
			if _, err := set.addReplica(ctx, nil); err != nil {
				return nil, err
			}
			if err := set.waitReplicas(ctx); err != nil {
				return nil, fmt.Errorf("replication: replica %d joining: %w", n, err)
			}
			env.Logf("replica %d joined (state transfer)", n)
		}
		for c := 1; c <= s.Clients; c++ {
			for _, kind := range []string{plain, aware} {
				runs := runClients(ctx, set.bal.FrontDoor(groupReplicated), kind, c, s.Invocations, time.Time{}, fmt.Sprintf("r%dc%d%s", n, c, kind))
				rw, d, err := summarise(configReplicated, kind, n, c, runs, s.Discard)
				if err != nil {
					return nil, err
				}
				distinct += d
				rows = append(rows, rw)
				env.Logf("%d replicas, %d %s clients: RTT p50 %.3f ms (append %.3f, wait %.3f)", n, c, kind, rw.RTTP50MS, rw.AppendP50MS, rw.WaitP50MS)
			}
		}
		if n == 2 {
			// The two other topologies, with 2 replicas (callers.go), on
			// loopback only.
			if !r.Testbed {
				more, d, chk, err := measureTopologies(ctx, set, s)
				if err != nil {
					return nil, err
				}
				rows = append(rows, more...)
				distinct += d
				callers = chk
			}
			// Throughput on 2 replicas, as the RTT target's baseline.
			tp, err = measureThroughput(ctx, set, s.ThroughputConc, s.throughput)
			if err != nil {
				return nil, err
			}
			distinct += tp.Calls
			env.Logf("throughput: %d concurrent clients on %d replicas, %.0f ordered requests/s", s.ThroughputConc, tp.Replicas, tp.RPS)
		}
		if err := set.checkInvariants(ctx, distinct); err != nil {
			return nil, err
		}
	}
	for c := 1; c <= s.Clients; c++ {
		for _, cfg := range []struct{ name, url string }{{configDirect, set.plain.url}, {configPerRequest, set.bal.FrontDoor(groupPerRequest)}} {
			runs := runClients(ctx, cfg.url, plain, c, s.Invocations, time.Time{}, fmt.Sprintf("%s%d", cfg.name, c))
			rw, _, err := summarise(cfg.name, plain, 1, c, runs, s.Discard)
			if err != nil {
				return nil, err
			}
			rows = append(rows, rw)
			env.Logf("%s, %d clients: RTT p50 %.3f ms", cfg.name, c, rw.RTTP50MS)
		}
	}

	var faults []faultPoint
	if r.FailpointBinary != "" {
		faults, err = measureFaults(ctx, env, r.FailpointBinary, s)
		if err != nil {
			return nil, err
		}
	}
	return &bench.Results{
		Rows:   rows,
		Report: report(s, rows, tp, callers, faults, r.FailpointBinary != "", r.Testbed),
		Extra:  map[string]any{"testbed": r.Testbed, "settings": s, "throughput": tp, "callers": callers, "faults": faults},
	}, nil
}
