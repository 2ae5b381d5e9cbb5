package eft

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// Testbed mode (--testbed, docs/testbed.md): each replica of the real
// work-flows runs in a testbed slot of its own — a network namespace and
// a cgroup of slotCPU cores — so that the replicas are separate servers
// as the simulation's are: a replica's tasks share its slot's quota
// (processor sharing among its k slots, the simulation's model) and never
// another replica's. The balancer and the bench run in the root
// namespace, outside every quota, on what the slots leave of the
// machine's cores. /count is calibrated inside a slot, so a task of w ms
// takes w ms alone on a slot's replica.

const (
	// slotCPU is each replica's capacity in cores: 3 replicas take 1.2
	// of a 2-core machine's cores, leaving slotHeadroom and more to the
	// balancer, the bench and whatever else runs.
	slotCPU = 0.4
	// slotHeadroom is the cores the slots must leave to the balancer and
	// the bench (checkSlots).
	slotHeadroom = 0.5
	// slotPeriod is the CFS period: 1 ms / slotCPU, the shortest with the
	// kernel's 1 ms minimum quota, so that a throttled task waits at most
	// 1.5 ms, not a sizeable share of a 20 ms mean task.
	slotPeriod = 2500 * time.Microsecond
	// slotPort is where a replica listens in its namespace.
	slotPort = "8080"
)

// checkSlots refuses a --testbed run whose servers slots of slotCPU
// cores would leave less than slotHeadroom of cores to the balancer and
// the bench.
func checkSlots(servers int, cores float64) error {
	if need := float64(servers)*slotCPU + slotHeadroom; need > cores {
		return fmt.Errorf("eft: --testbed with --servers %d: %d slots of %.2f cores and %.2f for the balancer and the bench need %.2f cores, this machine has %g",
			servers, servers, slotCPU, slotHeadroom, need, cores)
	}
	return nil
}

// startSlotReplicas makes the testbed with a slot per server and starts
// "fulcrum backend prime" in each (one P: the slot has less than a core);
// it returns the replicas' URLs. The caller closes the testbed, which
// stops what runs in it.
func (r *realRunner) startSlotReplicas(ctx context.Context) ([]string, error) {
	tb, err := testbed.New(testbed.Options{CPUPeriod: slotPeriod})
	if err != nil {
		return nil, fmt.Errorf("--testbed needs the testbed (root, network namespaces, cgroups; docs/testbed.md): %w", err)
	}
	r.tb = tb
	var urls []string
	for i := range r.e.Servers {
		slot, err := tb.AddReplica(testbed.ReplicaSpec{CPU: slotCPU})
		if err != nil {
			return nil, fmt.Errorf("--testbed: slot for replica %d of %d (%.2f cores each): %w", i+1, r.e.Servers, slotCPU, err)
		}
		lines := make(chan string, 1)
		p, err := r.env.Start(bench.ProcSpec{
			Name: r.env.UniqueName(fmt.Sprintf("eft-replica-%d", i+1)), Path: r.env.Binary,
			Args:      []string{"backend", "prime", "--listen", net.JoinHostPort(slot.Addr().String(), slotPort)},
			Env:       []string{"GOMAXPROCS=1"},
			Wrap:      func(cmd *exec.Cmd) error { return slot.Wrap(cmd) },
			FirstLine: lines,
		})
		if err != nil {
			return nil, err
		}
		url, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
		if err != nil {
			p.Stop(0)
			return nil, err
		}
		if err := bench.WaitHTTP(ctx, p, url+"/healthz", 20*time.Second); err != nil {
			p.Stop(0)
			return nil, err
		}
		r.env.Logf("eft: replica %d: %s in slot %s (%.2f cores, CFS period %s), pid %d", i+1, url, slot.Name(), slotCPU, slotPeriod, p.Pid())
		urls = append(urls, url)
	}
	return urls, nil
}
