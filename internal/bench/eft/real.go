package eft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	sched "github.com/fulcrum-lb/fulcrum/internal/eft"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Real work-flows: after the simulation, generated work-flows (the same
// generator, small v) run on real replicas — "fulcrum backend prime"
// processes on loopback, static members of a group of a real "fulcrum
// serve" — through the admin API (POST /v1/groups/{name}/workflows), once
// placed by EFT and once by round-robin (the request's placement), and
// the makespans the balancer measured are compared. A task of cost w ms
// calls GET /count/{x}, the sieve up to x, with x calibrated on one
// replica so that the sieve takes w ms when it runs alone; the edges'
// communication costs and timeouts are given to the scheduler as they
// are, but no data is sent along them. With --testbed the replicas run
// in testbed slots instead (real_testbed.go).

func init() { realRun = runReal }

// realGroup is the balancer's group of the real work-flows.
const realGroup = "eft"

// realSettings are the real runs' settings: v by size, each stateful
// ratio of the experiment, realStateGroups state groups.
const realStateGroups = 2

// RealRow is one setting of the real runs in results.json ("real"): mean
// makespans (ms) the balancer measured, per placement.
type RealRow struct {
	Name          string  `json:"name"`
	StatefulRatio float64 `json:"stateful_ratio"`
	StateGroups   int     `json:"state_groups"`
	Tasks         int     `json:"tasks"`
	Graphs        int     `json:"graphs"`
	EFTMS         float64 `json:"eft_makespan_ms"`
	RoundRobinMS  float64 `json:"round_robin_makespan_ms"`
	// EFTVsRR is 1 − EFT/RR of the mean makespans.
	EFTVsRR float64 `json:"eft_vs_round_robin"`
	// EFTWins is the share of graphs EFT finished sooner than
	// round-robin.
	EFTWins float64 `json:"eft_wins_share"`
	// SimEFTVsRR is the simulation's 1 − EFT/RR for the same graphs on
	// its model of the servers.
	SimEFTVsRR float64 `json:"simulated_eft_vs_round_robin"`
}

// realRunner drives the real runs.
type realRunner struct {
	e     *EFT
	env   *bench.Env
	bal   *bench.Balancer
	hc    *http.Client
	msPer float64          // ms of /count/{x} per unit of x, alone on a replica
	tb    *testbed.Testbed // --testbed: the replicas' slots; nil on loopback
}

func runReal(ctx context.Context, env *bench.Env, e *EFT, res *bench.Results) error {
	if strings.HasSuffix(filepath.Base(env.Binary), ".test") {
		// A Go test binary runs the experiment without a fulcrum binary
		// (bench.Options.Binary): it cannot start replicas or balancers.
		res.Report.Heading("Real work-flows")
		res.Report.Para("Not run: the experiment ran inside a Go test binary (%s), which cannot start fulcrum processes; pass a fulcrum binary (bench.Options.Binary) to run them.", filepath.Base(env.Binary))
		env.Logf("eft: real work-flows skipped: %s is a Go test binary", env.Binary)
		return nil
	}
	graphs := bench.Pick(env.Size, 10, 4, 1)
	sizes := bench.Pick(env.Size, []int{25, 50}, []int{25}, []int{12})
	r := &realRunner{e: e, env: env, hc: &http.Client{Timeout: 2 * time.Minute}}
	began := time.Now()
	defer r.stop()
	if err := r.start(ctx); err != nil {
		return fmt.Errorf("eft: real work-flows: %w", err)
	}
	var rows []RealRow
	si := 0
	for _, ratio := range e.Ratios {
		for _, v := range sizes {
			s := setting{ratio: ratio, groups: realStateGroups, tasks: v}
			row, err := r.runSetting(ctx, s, si, graphs)
			if err != nil {
				return fmt.Errorf("eft: real work-flows: %w", err)
			}
			rows = append(rows, row)
			si++
		}
	}
	extra := map[string]any{
		"rows": rows, "replicas": e.Servers, "k": e.K, "graphs_per_setting": graphs,
		"count_ms_per_million": r.msPer * 1e6, "elapsed_s": time.Since(began).Seconds(),
		"testbed": e.Testbed,
	}
	if e.Testbed {
		extra["slot_cpu"], extra["slot_cpu_period_ms"] = slotCPU, float64(slotPeriod)/float64(time.Millisecond)
	}
	res.Extra["real"] = extra
	r.report(res.Report, rows, graphs, time.Since(began))
	return nil
}

// start runs the replicas (on loopback, or in testbed slots with
// --testbed) and the balancer and calibrates /count on the first replica.
func (r *realRunner) start(ctx context.Context) error {
	var urls []string
	if r.e.Testbed {
		var err error
		if urls, err = r.startSlotReplicas(ctx); err != nil {
			return err
		}
	} else {
		for i := range r.e.Servers {
			rep, err := r.env.StartReplica(ctx, fmt.Sprintf("eft-replica-%d", i+1), nil)
			if err != nil {
				return err
			}
			urls = append(urls, rep.URL)
		}
	}
	var err error
	r.bal, err = r.env.StartBalancer(ctx, bench.GroupSpec{
		Name: realGroup, Binding: "per-request", Strategy: "round-robin", Replicas: urls,
		Extra: fmt.Sprintf("    workflow:\n      parallel: %d\n", r.e.K),
	})
	if err != nil {
		return err
	}
	if err := r.bal.WaitReady(ctx, realGroup, len(urls), false); err != nil {
		return err
	}
	return r.calibrate(ctx, urls[0])
}

// stop closes the runner's idle connections (a slot's, whose veth goes
// with the testbed, might never see its FIN), stops the balancer and
// removes the testbed, if any (which stops the replicas in it; on
// loopback the bench stops them).
func (r *realRunner) stop() {
	r.hc.CloseIdleConnections()
	if r.bal != nil {
		r.bal.Proc.Stop(3 * time.Second)
	}
	if r.tb != nil {
		if err := r.tb.Close(); err != nil {
			r.env.Logf("eft: removing the testbed: %v", err)
		}
	}
}

// calibrate measures /count/{x} alone on a replica: the median of a few
// calls of x = 10⁶ after a warm-up.
func (r *realRunner) calibrate(ctx context.Context, base string) error {
	const x = 1_000_000
	var d []time.Duration
	for i := range 6 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/count/"+strconv.Itoa(x), nil)
		if err != nil {
			return err
		}
		t0 := time.Now()
		resp, err := r.hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("calibrating /count: %s", resp.Status)
		}
		if i > 0 { // the first warms the replica up
			d = append(d, time.Since(t0))
		}
	}
	slices.Sort(d)
	r.msPer = float64(d[len(d)/2]) / float64(time.Millisecond) / x
	r.env.Logf("eft: real: /count/%d takes %s alone on a replica%s", x, d[len(d)/2].Round(time.Microsecond), r.where())
	return nil
}

// runSetting runs graphs work-flows of s under both placements, in
// alternating order.
func (r *realRunner) runSetting(ctx context.Context, s setting, si, graphs int) (RealRow, error) {
	row := RealRow{
		Name:          fmt.Sprintf("real: stateful %s, %d groups, v=%d", pct(s.ratio), s.groups, s.tasks),
		StatefulRatio: s.ratio, StateGroups: s.groups, Tasks: s.tasks, Graphs: graphs,
	}
	var sim [2]float64
	wins := 0
	for gi := range graphs {
		// A stream of its own, apart from the simulation's graphs.
		rng := rand.New(rand.NewPCG(r.e.Seed^0x7265616c, uint64(si)<<32|uint64(gi)))
		tasks, err := Generate(rng, s.params())
		if err != nil {
			return row, err
		}
		order := []string{protocol.PlacementEFT, protocol.PlacementRoundRobin}
		if gi%2 == 1 {
			slices.Reverse(order)
		}
		got := map[string]float64{}
		for _, p := range order {
			ms, err := r.runOne(ctx, tasks, p)
			if err != nil {
				return row, err
			}
			got[p] = ms
		}
		row.EFTMS += got[protocol.PlacementEFT]
		row.RoundRobinMS += got[protocol.PlacementRoundRobin]
		if got[protocol.PlacementEFT] < got[protocol.PlacementRoundRobin] {
			wins++
		}
		g, err := sched.NewGraph(tasks)
		if err != nil {
			return row, err
		}
		for i, p := range []sched.Policy{sched.PolicyEFT, sched.PolicyRoundRobin} {
			m, err := sched.Simulate(g, r.e.Servers, r.e.K, p)
			if err != nil {
				return row, err
			}
			sim[i] += m
		}
	}
	n := float64(graphs)
	row.EFTMS /= n
	row.RoundRobinMS /= n
	row.EFTVsRR = 1 - row.EFTMS/row.RoundRobinMS
	row.EFTWins = float64(wins) / n
	row.SimEFTVsRR = 1 - sim[0]/sim[1]
	r.env.Logf("eft: %s: EFT %.1f ms, round-robin %.1f ms (%s)", row.Name, row.EFTMS, row.RoundRobinMS, pct2(row.EFTVsRR))
	return row, nil
}

// runOne submits one work-flow with placement and waits for its end; it
// returns the makespan the balancer measured.
func (r *realRunner) runOne(ctx context.Context, tasks []sched.Task, placement string) (float64, error) {
	req := protocol.WorkflowRequest{Placement: placement}
	for _, t := range tasks {
		cost := t.Cost
		x := min(max(int(cost/r.msPer), 0), backend.MaxCountX)
		wt := protocol.WorkflowTask{ID: t.ID, Path: "/count/" + strconv.Itoa(x), CostMS: &cost, StateGroup: t.StateGroup}
		for _, e := range t.After {
			wt.After = append(wt.After, protocol.WorkflowEdge{ID: e.From, CostMS: e.Cost, Timeout: protocol.Duration(e.Timeout)})
		}
		req.Tasks = append(req.Tasks, wt)
	}
	var st protocol.WorkflowStatus
	if err := r.call(ctx, http.MethodPost, "/v1/groups/"+realGroup+"/workflows", req, http.StatusAccepted, &st); err != nil {
		return 0, err
	}
	if err := r.call(ctx, http.MethodGet, "/v1/groups/"+realGroup+"/workflows/"+st.ID+"?wait=1m", nil, http.StatusOK, &st); err != nil {
		return 0, err
	}
	if st.State != protocol.WorkflowDone || st.MakespanMS == nil {
		for _, t := range st.Tasks {
			if t.State != protocol.TaskDone {
				return 0, fmt.Errorf("work-flow %s (%s) ended %s: task %s %s: %s", st.ID, placement, st.State, t.ID, t.State, t.Error)
			}
		}
		return 0, fmt.Errorf("work-flow %s (%s) is still %s after a minute", st.ID, placement, st.State)
	}
	return *st.MakespanMS, nil
}

// call sends a JSON request to the admin API and decodes the answer.
func (r *realRunner) call(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.bal.Admin+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

// where is " in its slot" with --testbed, "" on loopback.
func (r *realRunner) where() string {
	if r.e.Testbed {
		return " in its slot"
	}
	return ""
}

// report adds the real runs' section.
func (r *realRunner) report(rep *bench.Report, rows []RealRow, graphs int, elapsed time.Duration) {
	rep.Heading("Real work-flows")
	where := "on loopback"
	servers := fmt.Sprintf("The replicas share this machine's %d CPUs, so they are not independent servers as the simulation's are: a replica's calls slow the others' when more run than there are CPUs.", r.env.Machine.CPUs)
	if r.e.Testbed {
		where = fmt.Sprintf("each in a testbed slot of %.2f cores (--testbed: a network namespace and a cgroup, CFS period %s)", slotCPU, slotPeriod)
		servers = fmt.Sprintf("The slots take %.2f of this machine's %d CPUs, so the replicas are separate servers as the simulation's are: a replica's k tasks share its slot, never another's; the balancer and the bench run outside the slots.",
			float64(r.e.Servers)*slotCPU, r.env.Machine.CPUs)
	}
	rep.Para("%d generated work-flows per setting (the generator above, %d state groups) run through the admin API (POST /v1/groups/{name}/workflows) on %d real replicas "+
		"(\"fulcrum backend prime\" %s, static members of a \"fulcrum serve\" group with workflow.parallel = k = %d), once placed by EFT and once by round-robin "+
		"(placement: round-robin), in alternating order. A task of cost w ms calls GET /count/{x} with x calibrated so that the sieve takes w ms alone on a replica%s "+
		"(%.2f ms per million); edges' costs and timeouts go to the scheduler, no data is sent along them. Makespans are the balancer's (finished − submitted). "+
		"%s The last column is the simulation's figure for the same graphs. Took %s.",
		graphs, realStateGroups, r.e.Servers, where, r.e.K, r.where(), r.msPer*1e6, servers, elapsed.Round(time.Millisecond))
	var cells [][]string
	for _, row := range rows {
		cells = append(cells, []string{
			pct(row.StatefulRatio), strconv.Itoa(row.Tasks), fmt.Sprintf("%.1f", row.EFTMS), fmt.Sprintf("%.1f", row.RoundRobinMS),
			pct2(row.EFTVsRR), fmt.Sprintf("%.0f%%", 100*row.EFTWins), pct2(row.SimEFTVsRR),
		})
	}
	rep.Table([]string{"stateful", "v", "EFT ms", "RR ms", "EFT vs RR", "EFT sooner on", "simulated EFT vs RR"}, cells)
}
