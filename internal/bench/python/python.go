package python

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Name is the experiment's name on the command line.
const Name = "python"

func init() { bench.Register(Name, func() bench.Experiment { return &Python{WorkUS: DefaultWorkUS} }) }

// The balancer's groups, both on-demand: the client replica's, whose
// front door the bound arm calls, and the monitored replica's (a group of
// its own, so that the bound arm can bind only to the client replica).
const (
	Group        = "py"
	MonitorGroup = "py-monitor"
)

// DefaultWorkUS is the CPU time the handler spends per call, in µs.
const DefaultWorkUS = 100

// Python is the experiment. Its fields are its flags.
type Python struct {
	// Python is the interpreter (default DefaultPython).
	Python string
	// Calls and Rounds override the size's calls per arm and round and
	// number of rounds (0: the size's).
	Calls, Rounds int
	// WorkUS is the handler's CPU time per call in µs.
	WorkUS float64
}

// Name implements bench.Experiment.
func (*Python) Name() string { return Name }

// Summary implements bench.Experiment.
func (*Python) Summary() string {
	return "Python SDK: ASGIMonitor's cost per call and BindingTransport's bound calls against direct httpx, on a 100 µs Starlette handler"
}

// AddFlags implements bench.FlagAdder.
func (p *Python) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.Python, "python", "", "Python interpreter with fulcrum_client, starlette and uvicorn (default "+DefaultPython+", made by scripts/test.sh)")
	fs.IntVar(&p.Calls, "calls", 0, "calls per arm and round (default: 5000, --quick 2000, --smoke 40)")
	fs.IntVar(&p.Rounds, "rounds", 0, "interleaved rounds (default: 20, --quick 8, --smoke 2)")
	fs.Float64Var(&p.WorkUS, "work-us", DefaultWorkUS, "CPU time the handler spends per call, in µs")
}

// Check implements bench.Checker.
func (p *Python) Check(bench.Size) error {
	if p.Calls < 0 {
		return fmt.Errorf("bench python: --calls %d: must be ≥ 1 (or 0 for the size's)", p.Calls)
	}
	if p.Rounds < 0 {
		return fmt.Errorf("bench python: --rounds %d: must be ≥ 1 (or 0 for the size's)", p.Rounds)
	}
	if p.WorkUS < 0 || p.WorkUS > 1e6 || math.IsNaN(p.WorkUS) {
		return fmt.Errorf("bench python: --work-us %v: must be in [0, 1000000]", p.WorkUS)
	}
	return nil
}

// ByNameOnly implements bench.ByNameOnly: "bench all" leaves the
// experiment out, since it needs the SDK's virtual environment; it runs
// when named.
func (*Python) ByNameOnly() bool { return true }

// sizes are a run's counts.
type sizes struct{ warmup, calls, rounds int }

func (p *Python) sizesOf(s bench.Size) sizes {
	z := sizes{
		warmup: bench.Pick(s, 2000, 500, 20),
		calls:  bench.Pick(s, 5000, 2000, 40),
		rounds: bench.Pick(s, 20, 8, 2),
	}
	if p.Calls > 0 {
		z.calls = p.Calls
	}
	if p.Rounds > 0 {
		z.rounds = p.Rounds
	}
	return z
}

// Pinning says where the driver and the replicas run.
type Pinning struct {
	// DriverCPU and ReplicaCPU are the CPUs; -1 when not pinned.
	DriverCPU  int    `json:"driver_cpu"`
	ReplicaCPU int    `json:"replica_cpu"`
	Note       string `json:"note"`
}

func pinningOf(cpus []int) Pinning {
	if len(cpus) < 2 {
		return Pinning{DriverCPU: -1, ReplicaCPU: -1, Note: "one CPU: the driver and the replicas share it"}
	}
	return Pinning{DriverCPU: cpus[0], ReplicaCPU: cpus[1],
		Note: fmt.Sprintf("the driver on CPU %d, the replicas on CPU %d (the balancer unpinned)", cpus[0], cpus[1])}
}

// Run implements bench.Experiment.
func (p *Python) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	if err := p.Check(env.Size); err != nil {
		return nil, err
	}
	sz := p.sizesOf(env.Size)
	py, err := findInterpreter(ctx, p.Python)
	if err != nil {
		return nil, err
	}
	env.Logf("python %s at %s: %v", py.Version, py.Path, py.Packages)
	pin := pinningOf(py.CPUs)
	env.Logf("pinning: %s", pin.Note)
	dir, err := env.ScratchDir("python")
	if err != nil {
		return nil, err
	}
	replicaScript, driverScript, err := writeScripts(dir)
	if err != nil {
		return nil, err
	}
	bal, err := env.StartBalancer(ctx,
		bench.GroupSpec{Name: Group, Binding: protocol.OnDemand, Strategy: "least-loaded"},
		bench.GroupSpec{Name: MonitorGroup, Binding: protocol.OnDemand, Strategy: "least-loaded"})
	if err != nil {
		return nil, err
	}
	work := strconv.FormatFloat(p.WorkUS, 'f', -1, 64)
	start := func(name string, args ...string) (*replica, error) {
		return startReplica(ctx, env, py.Path, replicaScript, name, pin.ReplicaCPU, append([]string{"--work-us", work}, args...))
	}
	plain, err := start("replica-plain")
	if err != nil {
		return nil, err
	}
	control, err := start("replica-plain-control")
	if err != nil {
		return nil, err
	}
	monitored, err := start("replica-monitored", "--balancer", bal.Admin, "--group", MonitorGroup)
	if err != nil {
		return nil, err
	}
	client, err := start("replica-client", "--balancer", bal.Admin, "--group", Group)
	if err != nil {
		return nil, err
	}
	for _, g := range []string{Group, MonitorGroup} {
		if err := bal.WaitReady(ctx, g, 1, true); err != nil {
			return nil, err
		}
	}
	replicaOf := map[string]*replica{ArmPlain: plain, ArmControl: control, ArmMonitored: monitored, ArmDirect: client, ArmBound: client}
	drv, bindings, err := startDriver(ctx, env, py.Path, driverScript, pin.DriverCPU, sz.warmup, []driverArm{
		{name: ArmPlain, url: plain.url + "/work"},
		{name: ArmControl, url: control.url + "/work"},
		{name: ArmMonitored, url: monitored.url + "/work"},
		{name: ArmDirect, url: client.url + "/work"},
		{name: ArmBound, url: bal.FrontDoor(Group) + "/work", bound: true},
	})
	if err != nil {
		return nil, err
	}
	defer drv.close()
	if got := bindings[ArmBound]; got != client.url {
		return nil, fmt.Errorf("bench python: the bound arm is bound to %q after its warm-up, want the client replica %s", got, client.url)
	}
	env.Logf("driver warmed up (%d calls per arm); bound arm bound to %s", sz.warmup, bindings[ArmBound])

	rounds := make([]Round, 0, sz.rounds)
	for r := range sz.rounds {
		rd := Round{}
		for _, i := range bench.RoundOrder(len(Arms), r) {
			arm := Arms[i]
			m, err := measure(ctx, drv, replicaOf[arm], arm, sz.calls)
			if err != nil {
				return nil, err
			}
			if arm == ArmBound && (m.Binding == nil || *m.Binding != client.url) {
				return nil, fmt.Errorf("bench python: round %d: the bound arm left the client replica (bound to %v)", r+1, m.Binding)
			}
			rd[arm] = m
		}
		rounds = append(rounds, rd)
		ra := ratiosOf([]Round{rd})
		env.Logf("round %d/%d: monitored/plain time %.3f (CPU %.3f), bound/direct throughput %.3f, control/plain time %.3f",
			r+1, sz.rounds, ra.MonitorTime.Median, ra.MonitorCPU.Median, ra.BoundThroughput.Median, ra.ControlTime.Median)
	}
	for _, rp := range []*replica{plain, control, monitored, client} {
		if err := rp.alive(); err != nil {
			return nil, err
		}
	}
	ratios := ratiosOf(rounds)
	rows := rowsOf(rounds)
	report := bench.NewReport("fulcrum bench python")
	if err := writeReport(env, report, rows, rounds, ratios, py, pin, sz, p.WorkUS); err != nil {
		return nil, err
	}
	return &bench.Results{Rows: rows, Report: report, Extra: map[string]any{
		"python":  py,
		"pinning": pin,
		"work_us": p.WorkUS,
		"size":    map[string]int{"warmup_calls": sz.warmup, "calls_per_round": sz.calls, "rounds": sz.rounds},
		"ratios":  ratios,
	}}, nil
}

// measure runs one segment of arm and meters its replica's CPU time.
func measure(ctx context.Context, drv *driver, rp *replica, arm string, calls int) (Measure, error) {
	if err := rp.alive(); err != nil {
		return Measure{}, err
	}
	cpu := bench.NewCPUMeter(rp.proc)
	cpu.Begin()
	seg, err := drv.run(ctx, arm, calls)
	if err != nil {
		return Measure{}, err
	}
	cpu.End()
	m := Measure{Segment: seg, ReplicaCPUUS: math.NaN()}
	if v := cpu.PerCall(seg.Calls + seg.Errors); v != nil {
		m.ReplicaCPUUS = *v
	}
	return m, nil
}

// replica is a running replica.py.
type replica struct {
	url  string
	proc *bench.Proc
}

// startReplica starts replica.py and returns once it answers /healthz.
func startReplica(ctx context.Context, env *bench.Env, python, script, name string, cpu int, args []string) (*replica, error) {
	lines := make(chan string, 1)
	all := append([]string{"-u", script, "--cpu", strconv.Itoa(cpu)}, args...)
	proc, err := env.Start(bench.ProcSpec{Name: env.UniqueName(name), Path: python, Args: all, FirstLine: lines})
	if err != nil {
		return nil, err
	}
	url, err := bench.WaitLine(ctx, proc, lines, "listening on ", 30*time.Second)
	if err != nil {
		return nil, err
	}
	if err := bench.WaitHTTP(ctx, proc, url+"/healthz", 30*time.Second); err != nil {
		return nil, err
	}
	env.Logf("replica %s: %s, pid %d", proc.Name, url, proc.Pid())
	return &replica{url: url, proc: proc}, nil
}

// alive fails when the replica has exited.
func (r *replica) alive() error {
	select {
	case <-r.proc.Exited():
		return fmt.Errorf("bench python: %s exited (%v); see %s", r.proc.Name, r.proc.Err(), r.proc.Log)
	default:
		return nil
	}
}
