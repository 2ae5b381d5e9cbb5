package eft

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	sched "github.com/fulcrum-lb/fulcrum/internal/eft"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// Name is the experiment's name.
const Name = "eft"

func init() { bench.Register(Name, func() bench.Experiment { return &EFT{} }) }

// Table I of Chen et al. and the simulation's servers.
var (
	defaultTasks  = []int{25, 50, 100, 200, 400}
	defaultGroups = []int{2, 4, 8}
	defaultRatios = []float64{0.25, 0.5}
)

const (
	defaultServers = 3
	defaultK       = 2
	defaultSeed    = 1
)

// EFT is Chen et al. §V's simulation (Table I, Fig. 17/18): random
// work-flows scheduled by EFT (Algorithm 2), ETT and round-robin on
// simulated servers (eft.Simulate), makespans normalised to
// round-robin's.
type EFT struct {
	// Graphs per setting; 0: 500 as in the paper (50 with --quick, 5
	// with --smoke).
	Graphs int
	// Seed of the generator; each graph draws from a PCG seeded with
	// (Seed, setting, graph), so a run is reproducible and a graph can be
	// drawn alone.
	Seed uint64
	// Tasks (v), Groups and Ratios span the settings; default Table I's.
	Tasks, Groups []int
	Ratios        []float64
	statefulPct   []int // --stateful, in percent: sets Ratios
	// Servers and K are the simulated servers and the tasks each runs at
	// once; default 3 and 2, as in the paper's example.
	Servers, K int
	// Testbed runs the real work-flows' replicas each in a testbed slot
	// of its own (a network namespace and a cgroup of slotCPU cores;
	// real_testbed.go, docs/testbed.md; needs root) instead of on
	// loopback, where they share the machine's CPUs. The simulation is
	// the same either way.
	Testbed bool
}

// Name implements bench.Experiment.
func (*EFT) Name() string { return Name }

// Summary implements bench.Experiment.
func (*EFT) Summary() string {
	return "Chen et al. §V, Fig. 17/18: EFT, ETT and round-robin work-flow makespans on simulated servers (Table I's graphs)"
}

// AddFlags implements bench.FlagAdder.
func (e *EFT) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&e.Graphs, "graphs", 0, "random work-flows per setting (default 500, --quick 50, --smoke 5)")
	fs.Uint64Var(&e.Seed, "seed", defaultSeed, "seed of the work-flow generator")
	fs.IntSliceVar(&e.Tasks, "tasks", nil, "tasks per work-flow, v (default 25,50,100,200,400)")
	fs.IntSliceVar(&e.Groups, "state-groups", nil, "state groups per work-flow (default 2,4,8)")
	fs.IntSliceVar(&e.statefulPct, "stateful", nil, "percentages of stateful tasks (default 25,50)")
	fs.IntVar(&e.Servers, "servers", 0, "simulated servers (default 3)")
	fs.IntVar(&e.K, "k", 0, "tasks a simulated server runs at once (default 2)")
	fs.BoolVar(&e.Testbed, "testbed", false, fmt.Sprintf("run the real work-flows' replicas each in a testbed slot of %.2f cores (needs root, docs/testbed.md) instead of on loopback", slotCPU))
}

// Check implements bench.Checker.
func (e *EFT) Check(size bench.Size) error {
	c := *e
	return c.defaults(size)
}

func (e *EFT) defaults(size bench.Size) error {
	if e.Graphs == 0 {
		e.Graphs = bench.Pick(size, 500, 50, 5)
	}
	if e.Seed == 0 {
		e.Seed = defaultSeed
	}
	if len(e.Tasks) == 0 {
		e.Tasks = defaultTasks
	}
	if len(e.Groups) == 0 {
		e.Groups = defaultGroups
	}
	for _, p := range e.statefulPct {
		if p < 1 || p > 100 {
			return fmt.Errorf("eft: --stateful %d, must be a percentage in [1, 100]", p)
		}
	}
	if len(e.Ratios) == 0 {
		e.Ratios = defaultRatios
		if len(e.statefulPct) > 0 {
			e.Ratios = nil
			for _, p := range e.statefulPct {
				e.Ratios = append(e.Ratios, float64(p)/100)
			}
		}
	}
	if e.Servers == 0 {
		e.Servers = defaultServers
	}
	if e.K == 0 {
		e.K = defaultK
	}
	switch {
	case e.Graphs < 1:
		return fmt.Errorf("eft: --graphs %d, must be 1 or more", e.Graphs)
	case e.Servers < 1:
		return fmt.Errorf("eft: --servers %d, must be 1 or more", e.Servers)
	case e.K < 1:
		return fmt.Errorf("eft: --k %d, must be 1 or more", e.K)
	}
	for _, v := range e.Tasks {
		if v < 1 || v > sched.MaxTasks {
			return fmt.Errorf("eft: --tasks %d, must be in [1, %d]", v, sched.MaxTasks)
		}
	}
	for _, r := range e.Ratios {
		if !(r > 0 && r <= 1) {
			return fmt.Errorf("eft: stateful ratio %v, must be in (0, 1]", r)
		}
	}
	for _, g := range e.Groups {
		if g < 1 {
			return fmt.Errorf("eft: --state-groups %d, must be 1 or more", g)
		}
	}
	if e.Testbed {
		return checkSlots(e.Servers, float64(runtime.NumCPU()))
	}
	return nil
}

// setting is one bar group of Fig. 17/18.
type setting struct {
	ratio  float64
	groups int
	tasks  int
}

func (s setting) params() GraphParams {
	return GraphParams{
		Tasks: s.tasks, Shape: tableIShape, MinOut: tableIMinOut, MaxOut: tableIMaxOut, CCR: tableICCR,
		MeanCost: meanCostMS, Groups: s.groups, StatefulRatio: s.ratio, TimeoutShare: timeoutShare, Timeout: defaultTimeout,
	}
}

// graphRun is one graph's makespans by policy (ms) and its lower bound.
type graphRun struct {
	makespan  [3]float64 // eft, ett, round-robin
	bound     float64
	pathBound bool // the bound is the longest path, not the work over the servers
}

// Run implements bench.Experiment.
func (e *EFT) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	if err := e.defaults(env.Size); err != nil {
		return nil, err
	}
	if e.Testbed {
		// Before the simulation, so that a run that cannot make its
		// real part's slots fails at once.
		if err := testbed.Available(); err != nil {
			return nil, fmt.Errorf("eft: --testbed needs the testbed (root, network namespaces, cgroups; docs/testbed.md): %w", err)
		}
	}
	var settings []setting
	for _, r := range e.Ratios {
		for _, g := range e.Groups {
			for _, v := range e.Tasks {
				settings = append(settings, setting{ratio: r, groups: g, tasks: v})
			}
		}
	}
	env.Logf("eft: %d settings × %d graphs, %d servers, k=%d, seed %d", len(settings), e.Graphs, e.Servers, e.K, e.Seed)
	began := time.Now()
	runs, err := e.simulate(ctx, settings)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(began)
	env.Logf("eft: simulated %d graphs in %s", len(settings)*e.Graphs, elapsed.Round(time.Millisecond))
	rows := make([]Row, len(settings))
	for si, s := range settings {
		rows[si] = rowOf(s, runs[si])
	}
	res := &bench.Results{Rows: rows, Extra: map[string]any{
		"simulation": map[string]any{
			"graphs_per_setting": e.Graphs, "seed": e.Seed, "servers": e.Servers, "k": e.K,
			"elapsed_s": elapsed.Seconds(), "mean_cost_ms": meanCostMS, "ccr": tableICCR, "shape": tableIShape,
			"out_degree": []int{tableIMinOut, tableIMaxOut}, "timeout_share": timeoutShare, "timeout_ms": defaultTimeout.Milliseconds(),
		},
	}}
	rep, err := e.report(env, rows, elapsed)
	if err != nil {
		return nil, err
	}
	res.Report = rep
	if realRun != nil {
		if err := realRun(ctx, env, e, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// realRun, when set by an init function of a real*.go file of this
// package, runs real work-flows against the testbed's replicas after the
// simulation, adding its rows to res.Extra and its sections and targets to
// res.Report. Nil: the experiment is the simulation alone.
var realRun func(ctx context.Context, env *bench.Env, e *EFT, res *bench.Results) error

// simulate runs every graph of every setting on GOMAXPROCS workers.
// Results do not depend on the workers' timing: each graph has its own
// seed and its own slot.
func (e *EFT) simulate(ctx context.Context, settings []setting) ([][]graphRun, error) {
	runs := make([][]graphRun, len(settings))
	for i := range runs {
		runs[i] = make([]graphRun, e.Graphs)
	}
	type job struct{ setting, graph int }
	jobs := make(chan job)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range jobs {
				run, err := e.runGraph(settings[j.setting], j.setting, j.graph)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				runs[j.setting][j.graph] = run
			}
		})
	}
feed:
	for si := range settings {
		for gi := range e.Graphs {
			select {
			case jobs <- job{si, gi}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("eft: simulation interrupted: %w", err)
	}
	return runs, nil
}

// runGraph draws graph gi of setting si and simulates it under every
// policy.
func (e *EFT) runGraph(s setting, si, gi int) (graphRun, error) {
	r := rand.New(rand.NewPCG(e.Seed, uint64(si)<<32|uint64(gi)))
	tasks, err := Generate(r, s.params())
	if err != nil {
		return graphRun{}, err
	}
	g, err := sched.NewGraph(tasks)
	if err != nil {
		return graphRun{}, fmt.Errorf("eft: generated graph %d of %v: %w", gi, s, err)
	}
	var run graphRun
	for pi, p := range sched.Policies {
		m, err := sched.Simulate(g, e.Servers, e.K, p)
		if err != nil {
			return graphRun{}, err
		}
		run.makespan[pi] = m
	}
	run.bound, run.pathBound = lowerBound(g, e.Servers)
	return run, nil
}

// lowerBound is a makespan no policy can beat: the longest path of
// computation costs (communication can be avoided by running a path on
// one server) or the total computation spread over every server,
// whichever is larger; path says it is the path.
func lowerBound(g *sched.Graph, servers int) (bound float64, path bool) {
	longest := make([]float64, g.Len())
	cp, work := 0.0, 0.0
	for _, i := range g.Order() {
		start := 0.0
		g.Preds(i, func(p int, _ float64, _ time.Duration) { start = max(start, longest[p]) })
		longest[i] = start + g.Cost(i)
		cp = max(cp, longest[i])
		work += g.Cost(i)
	}
	return max(cp, work/float64(servers)), cp >= work/float64(servers)
}
