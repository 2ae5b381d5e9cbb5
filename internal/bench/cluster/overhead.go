package cluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// The overhead configurations: the same callers, all at A's front door
// (one instance), spread evenly over A's, B's and C's (three), or all at
// B's (the A/A control: one instance again, on another process).
const (
	cfgOne     = "one-instance"
	cfgThree   = "three-instances"
	cfgControl = "one-instance-control"
)

// overheadCallers is how many closed-loop callers each configuration
// runs (a multiple of three).
const overheadCallers = 6

// OverheadRow is one configuration's row of results.json.
type OverheadRow struct {
	Name string `json:"name"`
	bench.Figures
	// Medians of the per-round ratios to one-instance's round
	// (throughput, mean latency), and the mean's 5%/95% bounds.
	ThroughputRatio       *float64      `json:"throughput_ratio_to_one,omitempty"`
	LatencyRatio          *float64      `json:"latency_ratio_to_one,omitempty"`
	ThroughputRatioBounds *stats.Bounds `json:"throughput_ratio_bounds,omitempty"`
	Rounds                int           `json:"rounds"`
	// InstanceCPUUS is the CPU time of the three instance processes
	// together per call, from /proc.
	InstanceCPUUS *float64 `json:"instance_cpu_us_per_call,omitempty"`
}

// overheadConfig is one configuration during the run.
type overheadConfig struct {
	name    string
	callers []*bench.Callers // run together, each its share of the calls
	rounds  []bench.LoadResult
	total   bench.LoadResult
	cpu     *bench.CPUMeter
}

// measureOverhead runs calls per configuration in rounds interleaved
// rounds through a per-request group of two replicas.
func measureOverhead(ctx context.Context, env *bench.Env, ins []*instance, calls, rounds int) ([]OverheadRow, *OverheadRow, error) {
	doors, err := createGroup(ctx, ins[0], ins, "overhead", map[string]any{"binding": "per-request", "strategy": "round-robin"})
	if err != nil {
		return nil, nil, err
	}
	for i := range 2 {
		r, err := env.StartReplica(ctx, fmt.Sprintf("replica-overhead-%d", i), nil)
		if err != nil {
			return nil, nil, err
		}
		if _, err := register(ctx, ins[0], "overhead", r.URL); err != nil {
			return nil, nil, err
		}
	}
	for _, in := range ins {
		if err := waitActive(ctx, in, "overhead", 2); err != nil {
			return nil, nil, err
		}
	}
	path := "/prime/" + strconv.Itoa(bench.PrimeN)
	at := func(door string, n int) *bench.Callers {
		return bench.NewCallers(bench.Endpoint{URL: door + path}, n)
	}
	var procs []*bench.Proc
	for _, in := range ins {
		procs = append(procs, in.proc)
	}
	per := overheadCallers / len(doors)
	cfgs := []*overheadConfig{
		{name: cfgOne, callers: []*bench.Callers{at(doors[0], overheadCallers)}},
		{name: cfgThree, callers: []*bench.Callers{at(doors[0], per), at(doors[1], per), at(doors[2], per)}},
		{name: cfgControl, callers: []*bench.Callers{at(doors[1], overheadCallers)}},
	}
	defer func() {
		for _, c := range cfgs {
			for _, cs := range c.callers {
				cs.Close()
			}
		}
	}()
	for _, c := range cfgs {
		c.cpu = bench.NewCPUMeter(procs...)
		for _, cs := range c.callers {
			if err := cs.Warm(ctx, 20); err != nil {
				return nil, nil, fmt.Errorf("cluster: overhead %s: %w", c.name, err)
			}
		}
	}
	env.Logf("overhead: %d calls per configuration in %d interleaved rounds, %d callers", calls, rounds, overheadCallers)
	for r := range rounds {
		share := calls / rounds
		if r < calls%rounds {
			share++
		}
		line := fmt.Sprintf("round %d/%d:", r+1, rounds)
		for _, i := range bench.RoundOrder(len(cfgs), r) {
			c := cfgs[i]
			c.cpu.Begin()
			res, err := runTogether(ctx, c.callers, share)
			if err != nil {
				return nil, nil, err
			}
			c.cpu.End()
			c.rounds = append(c.rounds, res)
			mergeInto(&c.total, res)
			f := res.Figures()
			line += fmt.Sprintf(" %s %.0f/s %.0fµs", c.name, f.ThroughputRPS, f.Mean)
		}
		env.Logf("%s", line)
	}
	rows := []OverheadRow{overheadRow(cfgs[0], cfgs[0]), overheadRow(cfgs[1], cfgs[0])}
	control := overheadRow(cfgs[2], cfgs[0])
	return rows, &control, nil
}

// runTogether runs every Callers at once, calls split evenly, and merges
// what they measured.
func runTogether(ctx context.Context, all []*bench.Callers, calls int) (bench.LoadResult, error) {
	results := make([]bench.LoadResult, len(all))
	errs := make([]error, len(all))
	start := time.Now().Add(5 * time.Millisecond)
	var wg sync.WaitGroup
	for i, cs := range all {
		n := calls / len(all)
		if i < calls%len(all) {
			n++
		}
		wg.Go(func() { results[i], errs[i] = cs.Run(ctx, start, max(n, 1), time.Time{}) })
	}
	wg.Wait()
	var out bench.LoadResult
	for i, r := range results {
		if errs[i] != nil {
			return out, errs[i]
		}
		mergeInto(&out, r)
	}
	return out, nil
}

// mergeInto adds o to l: latencies and errors add up, and l lasts as long
// as the longer of the two, as for loads that ran together (overheadRow
// adds the rounds' elapsed times up itself).
func mergeInto(l *bench.LoadResult, o bench.LoadResult) {
	if l.Rec == nil {
		l.Rec = stats.NewRecorder()
	}
	l.Rec.Merge(o.Rec)
	l.Errors += o.Errors
	if l.FirstError == "" {
		l.FirstError = o.FirstError
	}
	l.Elapsed = max(l.Elapsed, o.Elapsed)
}

// overheadRow is c's row with its ratios to base's rounds.
func overheadRow(c, base *overheadConfig) OverheadRow {
	row := OverheadRow{Name: c.name, Rounds: len(c.rounds)}
	if c.total.Rec == nil {
		return row
	}
	var elapsed time.Duration
	for _, r := range c.rounds {
		elapsed += r.Elapsed
	}
	total := c.total
	total.Elapsed = elapsed
	row.Figures = total.Figures()
	row.InstanceCPUUS = c.cpu.PerCall(row.Count + row.Errors)
	var thr, lat []float64
	for r := range min(len(c.rounds), len(base.rounds)) {
		fc, fb := c.rounds[r].Figures(), base.rounds[r].Figures()
		if fb.ThroughputRPS > 0 && fb.Mean > 0 {
			thr = append(thr, fc.ThroughputRPS/fb.ThroughputRPS)
			lat = append(lat, fc.Mean/fb.Mean)
		}
	}
	if len(thr) > 0 {
		t, l, b := stats.Median(thr), stats.Median(lat), stats.MeanBounds(thr)
		row.ThroughputRatio, row.LatencyRatio, row.ThroughputRatioBounds = &t, &l, &b
	}
	return row
}
