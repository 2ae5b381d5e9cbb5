package tcp

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// Name is the experiment's name on the command line.
const Name = "tcp"

func init() { bench.Register(Name, func() bench.Experiment { return &TCP{} }) }

// Replicas is the number of echo replicas every arm balances over.
const Replicas = 2

// ExchangeConnections are the connection counts of the small exchanges.
var ExchangeConnections = []int{1, 4, 16, 64}

// The workers of the bulk and new-connection parts.
const (
	BulkConnections    = 4
	ConnectConnections = 16
)

// IdleConnections is the number of idle connections of the memory part at
// full and quick size.
const IdleConnections = 10000

// The parts of the experiment, as rows name them.
const (
	PartExchange = "exchange"
	PartBulk     = "bulk"
	PartConnect  = "connect"
	PartIdle     = "idle"
)

// TCP is the experiment.
type TCP struct{}

// Name implements bench.Experiment.
func (*TCP) Name() string { return Name }

// Summary implements bench.Experiment.
func (*TCP) Summary() string {
	return "TCP front door against HAProxy and NGINX: 64 B exchanges, 1 MiB transfers, new connections/s, memory per idle connection"
}

// sizes are a run's durations and counts.
type sizes struct {
	warmup, window time.Duration
	idle           int
}

func sizesOf(s bench.Size) sizes {
	return sizes{
		warmup: bench.Pick(s, time.Second, 500*time.Millisecond, 50*time.Millisecond),
		window: bench.Pick(s, 10*time.Second, 3*time.Second, 250*time.Millisecond),
		idle:   bench.Pick(s, IdleConnections, IdleConnections, 200),
	}
}

// Run implements bench.Experiment.
func (t *TCP) Run(ctx context.Context, env *bench.Env) (*bench.Results, error) {
	sz := sizesOf(env.Size)
	lim := raiseDescriptorLimit(sz.idle)
	env.Logf("descriptors: %s", lim.Note)

	replicas := make([]string, Replicas)
	for i := range replicas {
		addr, _, err := startEcho(ctx, env, fmt.Sprintf("echo-%d", i+1))
		if err != nil {
			return nil, err
		}
		replicas[i] = addr
	}
	maxConn := lim.Idle + 1024 // the balancers' connection caps
	arms := []*arm{{name: ArmDirect, addrs: replicas}}
	for _, start := range []struct {
		name    string
		missing string
		start   func() (*arm, error)
	}{
		{ArmFulcrum, "", func() (*arm, error) { return startFulcrum(ctx, env, replicas, maxConn) }},
		{ArmHAProxy, env.HAProxy.Missing, func() (*arm, error) { return startHAProxy(ctx, env, replicas, maxConn) }},
		{ArmNGINX, nginxMissing(env), func() (*arm, error) { return startNGINX(ctx, env, replicas, maxConn) }},
	} {
		if start.missing != "" {
			arms = append(arms, &arm{name: start.name, skipped: start.missing})
			continue
		}
		a, err := start.start()
		if err != nil {
			return nil, err
		}
		arms = append(arms, a)
	}

	var rows []Row
	for _, n := range ExchangeConnections {
		for _, a := range arms {
			r, err := measure(ctx, env, a, PartExchange, n, sz, exchangeWorker(a))
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	for _, a := range arms {
		r, err := measure(ctx, env, a, PartBulk, BulkConnections, sz, bulkWorker(a))
		if err != nil {
			return nil, err
		}
		r.ThroughputMiBs = r.throughput() * BulkSize / (1 << 20)
		rows = append(rows, r)
	}
	for _, a := range arms {
		r, err := measure(ctx, env, a, PartConnect, ConnectConnections, sz, connectWorker(a))
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	for _, a := range arms {
		r, err := measureIdle(ctx, env, a, lim)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	addRatios(rows)
	report := bench.NewReport("fulcrum bench tcp")
	if err := writeReport(env, report, rows, lim); err != nil {
		return nil, err
	}
	return &bench.Results{Rows: rows, Report: report, Extra: map[string]any{
		"replicas":    Replicas,
		"descriptors": map[string]any{"limit": lim.Limit, "idle_connections": lim.Idle, "note": lim.Note},
	}}, nil
}

// nginxMissing says why NGINX's arm cannot run: NGINX or its stream
// module missing.
func nginxMissing(env *bench.Env) string {
	if env.NGINX.Missing != "" {
		return env.NGINX.Missing
	}
	if _, err := os.Stat(NGINXStreamModule); err != nil {
		return "NGINX's stream module is not installed (apt-get install libnginx-mod-stream)"
	}
	return ""
}

// measure runs one closed-loop part against an arm.
func measure(ctx context.Context, env *bench.Env, a *arm, part string, n int, sz sizes, newWorker func(context.Context, int) (op, func(), error)) (Row, error) {
	row := Row{Part: part, Name: a.name, Connections: n, Skipped: a.skipped}
	if a.skipped != "" {
		return row, nil
	}
	if err := a.alive(); err != nil {
		return row, err
	}
	res, err := closedLoop(ctx, n, sz.warmup, sz.window, newWorker)
	if err != nil {
		return row, fmt.Errorf("bench tcp: %s %s at %d connections: %w", part, a.name, n, err)
	}
	f := res.Figures()
	row.Figures = &f
	row.FirstError = res.FirstError
	env.Logf("%s %s, %d connections: %.0f/s, p50 %.0fµs, p99 %.0fµs, %d errors", part, a.name, n, f.ThroughputRPS, f.P50, f.P99, f.Errors)
	return row, a.alive()
}

// alive fails when the arm's balancer has exited.
func (a *arm) alive() error {
	if a.proc == nil {
		return nil
	}
	select {
	case <-a.proc.Exited():
		return fmt.Errorf("bench tcp: %s exited (%v); see %s", a.proc.Name, a.proc.Err(), a.proc.Log)
	default:
		return nil
	}
}

// measureIdle opens lim.Idle idle connections through a and reads its
// balancer's memory and descriptors before and with them.
func measureIdle(ctx context.Context, env *bench.Env, a *arm, lim descriptorLimit) (Row, error) {
	row := Row{Part: PartIdle, Name: a.name, Connections: lim.Idle, Skipped: a.skipped}
	if a.skipped != "" {
		return row, nil
	}
	if a.proc == nil {
		row.Note = "no balancer process"
		return row, nil
	}
	if lim.Idle == 0 {
		row.Skipped = lim.Note
		return row, nil
	}
	before, err := readProcMemory(a.proc.Pid())
	if err != nil {
		return row, err
	}
	conns, err := openIdle(ctx, a, lim.Idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if ctx.Err() != nil {
		return row, ctx.Err()
	}
	if err != nil {
		// Measured with the connections that did open; the row says why
		// there are fewer.
		row.FirstError = err.Error()
		env.Logf("idle %s: %v; measuring with the %d connections open", a.name, err, len(conns))
	}
	row.Connections = len(conns)
	if len(conns) == 0 {
		row.Skipped = "no idle connection could be opened: " + err.Error()
		return row, a.alive()
	}
	after, err := readProcMemory(a.proc.Pid())
	if err != nil {
		return row, err
	}
	n := float64(len(conns))
	row.Memory = &Memory{
		RSSBeforeBytes: before.RSSBytes, RSSBytes: after.RSSBytes,
		FDsBefore: before.FDs, FDs: after.FDs,
		RSSPerConnectionBytes: float64(after.RSSBytes-before.RSSBytes) / n,
		FDsPerConnection:      float64(after.FDs-before.FDs) / n,
	}
	env.Logf("idle %s, %d connections: RSS %.1f → %.1f MiB (%.0f B per connection), descriptors %d → %d", a.name, len(conns),
		float64(before.RSSBytes)/(1<<20), float64(after.RSSBytes)/(1<<20), row.Memory.RSSPerConnectionBytes, before.FDs, after.FDs)
	return row, a.alive()
}

// ByNameOnly implements bench.ByNameOnly: "bench all" leaves the
// experiment out, since it raises the process's descriptor limit and opens
// 10,000 connections through every balancer; it runs when named.
func (*TCP) ByNameOnly() bool { return true }
