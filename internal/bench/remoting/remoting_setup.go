package remoting

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// remotingCluster is one group size's set-up: the testbed with its
// replicas (each running "fulcrum backend prime", or NGINX with "fulcrum
// agent http" beside it, in its namespace and cgroup, registered with the
// balancer and reporting its CPU load), and the balancer with one
// per-request group.
type remotingCluster struct {
	tb        *testbed.Testbed
	reps      []*testbed.Replica
	bal       *bench.Balancer
	procs     []*bench.Proc
	bases     []string // the replicas' base URLs
	frontDoor string
}

// remotingReplicaPort is the port each replica listens on, in its own
// namespace.
const remotingReplicaPort = "8080"

// startCluster makes a testbed of n replicas sharing x.CPU cores
// equally, starts the balancer with its admin API on the first replica's
// gateway (an address of the root namespace every replica reaches), and
// starts the replicas (x.Replica), which register and report their CPU
// load every x.ReportInterval.
func (x *Remoting) startCluster(ctx context.Context, env *bench.Env, n int) (*remotingCluster, error) {
	tb, err := testbed.New(testbed.Options{CPUPeriod: remotingPeriod(x.CPU / float64(n))})
	if err != nil {
		return nil, err
	}
	cl := &remotingCluster{tb: tb}
	if err := x.fillCluster(ctx, env, cl, n); err != nil {
		cl.close()
		return nil, err
	}
	return cl, nil
}

// fillCluster adds the replicas and the balancer to cl.
func (x *Remoting) fillCluster(ctx context.Context, env *bench.Env, cl *remotingCluster, n int) error {
	tb := cl.tb
	var reps []*testbed.Replica
	for range n {
		r, err := tb.AddReplica(testbed.ReplicaSpec{CPU: x.CPU / float64(n)})
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	cl.reps = reps
	var err error
	cl.bal, err = env.StartBalancerAt(ctx, reps[0].Gateway().String(), bench.GroupSpec{
		Name: remotingGroup, Binding: "per-request", Strategy: remotingStrategyOf(x.Strategies[0]), ReportInterval: x.ReportInterval,
		Extra: x.groupExtra(),
	})
	if err != nil {
		return err
	}
	cl.procs = append(cl.procs, cl.bal.Proc)
	if x.Replica == RemotingReplicaNGINX {
		err = cl.startNGINXReplicas(ctx, env, cl.bal.Admin)
	} else {
		err = cl.startGoReplicas(ctx, env)
	}
	if err != nil {
		return err
	}
	if err := cl.bal.WaitReady(ctx, remotingGroup, n, true); err != nil {
		return err
	}
	cl.frontDoor = cl.bal.FrontDoor(remotingGroup)
	return nil
}

// startGoReplicas starts "fulcrum backend prime" in each replica; each
// registers itself with the balancer and reports its CPU load.
func (cl *remotingCluster) startGoReplicas(ctx context.Context, env *bench.Env) error {
	n := len(cl.reps)
	for i, r := range cl.reps {
		listen := net.JoinHostPort(r.Addr().String(), remotingReplicaPort)
		// The replica's monitor reads its quota (the denominator of its
		// cpu metric) and its cgroup's CPU time (cpu_other) itself: the
		// testbed leaves /sys/fs/cgroup visible.
		args := []string{"backend", "prime", "--listen", listen,
			"--register", cl.bal.Admin, "--group", remotingGroup, "--load", "cpu"}
		lines := make(chan string, 1)
		// As many Ps as the replica has cores: with the machine's two, the
		// Go runtime (its garbage collector above all) would spend a small
		// quota twice as fast and stall the replica for the rest of each
		// period. (The runtime's own default from the cgroup's limit
		// keeps at least two.)
		procs := max(1, int(math.Ceil(r.CPU())))
		wrap := func(cmd *exec.Cmd) error {
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
			return r.Wrap(cmd)
		}
		p, err := env.Start(bench.ProcSpec{Name: env.UniqueName(fmt.Sprintf("replica-%d-of-%d", i+1, n)), Path: env.Binary, Args: args, FirstLine: lines, Wrap: wrap})
		if err != nil {
			return err
		}
		cl.procs = append(cl.procs, p)
		url, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
		if err != nil {
			return err
		}
		if err := bench.WaitHTTP(ctx, p, url+"/healthz", 20*time.Second); err != nil {
			return err
		}
		env.Logf("replica %s: %s in %s (%.3g cores, GOMAXPROCS %d), pid %d", p.Name, url, r.Name(), r.CPU(), procs, p.Pid())
		cl.bases = append(cl.bases, url)
	}
	return nil
}

// cpuUsage is the CPU time all the replicas have used.
func (cl *remotingCluster) cpuUsage() (time.Duration, error) {
	var sum time.Duration
	for _, r := range cl.reps {
		u, err := r.CPUUsage()
		if err != nil {
			return 0, err
		}
		sum += u
	}
	return sum, nil
}

// remotingPeriod is the CFS period for replicas of cpu cores: the
// shortest whose quota is the kernel's minimum of 1 ms (2 ms for half a
// core, 8 ms for an eighth), at most the testbed's default 10 ms. A quota
// lets a replica run at the full speed of a core until it is spent, then
// stops it for the rest of the period; the shorter the period, the more
// the replica looks like a core cpu times as fast, on the time scale of
// its calls, rather than a fast one that stalls.
func remotingPeriod(cpu float64) time.Duration {
	p := time.Duration(float64(time.Millisecond) / cpu)
	return min(max(p.Round(100*time.Microsecond), time.Millisecond), testbed.DefaultCPUPeriod)
}

// close stops the processes and removes the testbed.
func (cl *remotingCluster) close() {
	for i := len(cl.procs) - 1; i >= 0; i-- {
		cl.procs[i].Stop(3 * time.Second)
	}
	if cl.tb != nil {
		_ = cl.tb.Close()
	}
}

// remotingStrategyOf is the strategy of a --strategies entry.
func remotingStrategyOf(entry string) string {
	name, _ := remotingConfig(entry)
	return name
}

// useStrategy switches the group to the --strategies entry name (PATCH,
// no restart): its strategy, and for a "+queue" entry max_inflight slots
// and a queue in cost order with queue.lead lead (none otherwise). It then waits until every
// replica has reported since, so that a report-driven strategy starts
// from current loads.
func (cl *remotingCluster) useStrategy(ctx context.Context, name string, slots int, lead, interval time.Duration) error {
	strat, queued := remotingConfig(name)
	patch := map[string]any{"strategy": strat, "max_inflight": 0, "queue": map[string]any{}}
	if queued {
		patch["max_inflight"] = slots
		q := map[string]any{"limit": remotingQueueLimit, "timeout": remotingQueueTimeout.String(), "order": "cost"}
		if lead > 0 {
			q["lead"] = lead.String()
		}
		patch["queue"] = q
	}
	if err := cl.bal.Send(ctx, http.MethodPatch, "/v1/groups/"+remotingGroup, patch); err != nil {
		return fmt.Errorf("bench: switching to %s: %w", name, err)
	}
	switched := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*interval+10*time.Second)
	defer cancel()
	tick := time.NewTicker(interval / 4)
	defer tick.Stop()
	for {
		st, err := cl.bal.Group(ctx, remotingGroup)
		if err == nil && freshReports(st, time.Since(switched)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: after switching to %s, the replicas did not all report within %s (last: %v)", name, 10*interval+10*time.Second, err)
		case <-tick.C:
		}
	}
}

// earlyNote is the log's note on the group's queue after a "+queue" run
// with a lead: the slots freed ahead so far, all runs together (c, read
// after the run), which shows whether the lead took effect. "" without
// a lead or when the counts could not be read.
func earlyNote(c remotingQueueCounts, ok bool, lead time.Duration) string {
	if !ok || lead <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d slots freed ahead so far)", c.early)
}

// queueCounts reads the group's queue counters; false when the status
// cannot be read or shows no queue.
func (cl *remotingCluster) queueCounts(ctx context.Context) (remotingQueueCounts, bool) {
	st, err := cl.bal.Group(ctx, remotingGroup)
	if err != nil || st.QueueStats == nil {
		return remotingQueueCounts{}, false
	}
	return remotingQueueCounts{served: st.QueueStats.Served, wait: st.QueueStats.WaitSeconds, early: st.QueueStats.Early}, true
}

// freshReports reports whether every replica of st has reported within
// the last since.
func freshReports(st bench.GroupStatus, since time.Duration) bool {
	if len(st.Replicas) == 0 {
		return false
	}
	for _, r := range st.Replicas {
		if r.ReportAgeMS == nil || time.Duration(*r.ReportAgeMS)*time.Millisecond >= since {
			return false
		}
	}
	return true
}
