package replication

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// report writes report.md's blocks and targets.
// onTestbed says the replicas ran on the testbed (--testbed).
func report(s settings, rows []row, tp throughput, callers callersCheck, faults []faultPoint, injected, onTestbed bool) *bench.Report {
	rep := bench.NewReport("bench replication: active replication of a stateful counter (MEAD)")
	rep.Para("Closed-loop clients call `POST /increment` on a counter replicated with `binding: replicated` (the log on the single-node bbolt engine, `fulcrum agent replicated` in front of each `fulcrum backend counter`), %d calls per client per point, the first %d of each client left out. Plain clients send nothing of fulcrum's (their connection is the session); protocol-aware ones send `Fulcrum-Session` and `Fulcrum-Sequence`. The split comes from the bridge's `Server-Timing`: *append* is the log's append, *wait* the wait for the first reply after it, *client↔bridge* the rest. Replicas 3 and 4 joined the running group by state transfer.", s.Invocations, s.Discard)
	if onTestbed {
		rep.Para("On the testbed (`--testbed`, docs/testbed.md): each replica's counter and its agent ran together in a network namespace of their own with a cgroup of %.2f cores (CFS period %s), and so did the plain counter behind the per-request group; the balancer and the clients ran in the root namespace.", slotCPU, slotPeriod)
	}

	rep.Heading("Round-trip time (ms)")
	var tab [][]string
	for _, r := range rows {
		split := "—"
		if bridged(r.Config) {
			split = fmt.Sprintf("%.3f / %.3f / %.3f", r.AppendP50MS, r.WaitP50MS, r.BridgeP50MS)
		}
		reps := fmt.Sprint(r.Replicas)
		switch r.Config {
		case configViaRelay:
			reps = fmt.Sprintf("%d (behind 1 relay)", r.Replicas)
		case configCallers:
			reps = fmt.Sprintf("%d relays (→ 1 counter)", r.Replicas)
		case configReplicated:
		default:
			reps = "1 (plain counter)"
		}
		tab = append(tab, []string{r.Config, r.Kind, reps, fmt.Sprint(r.Clients), fmt.Sprintf("%.3f", r.RTTP50MS), fmt.Sprintf("%.3f", r.RTTMeanMS), fmt.Sprintf("%.3f", r.RTTP99MS), split, fmt.Sprint(r.Errors)})
	}
	rep.Table([]string{"config", "clients' kind", "replicas", "clients", "RTT p50", "mean", "p99", "append / wait / client↔bridge (p50)", "errors"}, tab)

	// Target: replicated RTT ≤ per-request RTT + append p50 + 1 ms, for
	// 2 replicas and each number of clients.
	met, detail := true, ""
	for _, r := range rows {
		if r.Config != configReplicated || r.Replicas != 2 {
			continue
		}
		pr, ok := find(rows, configPerRequest, plain, 1, r.Clients)
		if !ok {
			continue
		}
		bound := pr.RTTP50MS + r.AppendP50MS + 1
		if r.RTTP50MS > bound {
			met = false
		}
		detail += fmt.Sprintf("%d %s clients: %.3f ≤ %.3f + %.3f + 1 = %.3f %s; ", r.Clients, r.Kind, r.RTTP50MS, pr.RTTP50MS, r.AppendP50MS, bound, mark(r.RTTP50MS <= bound))
	}
	rep.Target("replicated RTT ≤ per-request RTT + the log's append p50 + 1 ms (p50s, 2 replicas)", met, "%s", detail)
	if one, ok := find(rows, configReplicated, aware, 2, 1); ok {
		if most, ok := find(rows, configReplicated, aware, 2, s.Clients); ok && s.Clients > 1 {
			rep.Para("Where the time goes (2 replicas, protocol-aware clients, p50s): with 1 client, append %.3f ms and wait %.3f ms; with %d, append %.3f ms and wait %.3f ms. The wait for the first reply grows with the number of concurrent clients because every replica applies one request at a time, in log order (the agents' quiescence, which keeps replicas equal): the last of %d concurrent requests waits for the ones ahead of it at every replica, while per-request calls run side by side in the counter.", one.AppendP50MS, one.WaitP50MS, s.Clients, most.AppendP50MS, most.WaitP50MS, s.Clients)
		}
	}

	if onTestbed {
		rep.TargetUnknown("a deduplicating callee saw each outgoing call exactly once, and the replicated relays' states are equal", "the relay topologies run on loopback only, not with --testbed")
	} else {
		rep.Para("MEAD's other two topologies, with 2 replicas: *%s* is its own set-up, clients calling an unreplicated `fulcrum backend relay` whose calls go to the counters' bridge; *%s* are replicated callers, clients calling the bridge of a group of relays, each behind its agent and sending its calls to one plain `fulcrum backend counter --dedup` through it (`--proxy`): every relay makes each call, the balancer forwards it once with the key `<group>/<position>/<index>` as `Idempotency-Key`.", configViaRelay, configCallers)
		rep.Target("a deduplicating callee saw each outgoing call exactly once, and the replicated relays' states are equal", callers.Calls > 0 && callers.CalleeValue == callers.Calls && int64(callers.RelayIncrements) == callers.Calls,
			"%d calls to the relays; the callee's counter %d; each relay applied %d", callers.Calls, callers.CalleeValue, callers.RelayIncrements)
	}

	rep.Heading("Ordered requests per second")
	rep.Para("%d protocol-aware clients calling as fast as they can for %.0f s on %d replicas: %d calls, **%.0f ordered requests/s**, RTT p50 %.3f ms.", tp.Clients, tp.DurationS, tp.Replicas, tp.Calls, tp.RPS, tp.RTTP50MS)
	if onTestbed {
		// The target is the engine's: on the testbed each replica applies
		// the requests on a quarter of a core.
		rep.TargetUnknown(throughputTarget, "judged on loopback; on the testbed's %.2f-core replicas: %.0f requests/s", slotCPU, tp.RPS)
	} else {
		rep.Target(throughputTarget, tp.RPS >= 1000, "%.0f requests/s", tp.RPS)
	}

	reportGrowth(rep, rows, onTestbed)

	rep.Heading("Fault injection (MEAD Fig. 6)")
	if !injected {
		rep.Para("Not run: no `--failpoint-binary` was given.")
		rep.TargetUnknown("zero client-visible errors and duplicates at the injection points", "no --failpoint-binary")
		return rep
	}
	var ftab [][]string
	errs, fired := 0, true
	for _, f := range faults {
		errs += f.Errors
		fired = fired && f.Killed == f.Runs
		ftab = append(ftab, []string{fmt.Sprint(f.Point), f.What, fmt.Sprintf("%d of %d", f.Killed, f.Runs), fmt.Sprint(f.Errors), fmt.Sprintf("%.3f", f.BaseP50MS), fmt.Sprintf("%.1f", f.FaultMS), fmt.Sprintf("%+.1f", f.IncreaseMS)})
	}
	rep.Para("2 replicas, one protocol-aware client, %d calls per run, the failpoint armed in the second replica to kill its process (SIGKILL) at the middle call, %d runs per point. Every run checked that the surviving replica's counter equals the calls answered (no duplicate, no loss). Point 6 (the bridge dies between appending and answering; the client goes to another instance) is tested in cluster mode by the e2e tests.", s.FaultInvocations, s.Runs)
	rep.Table([]string{"point", "fault", "fired", "client-visible errors", "RTT p50 (ms)", "longest RTT from the fault (ms)", "increase (ms)"}, ftab)
	rep.Target("zero client-visible errors and duplicates at the injection points", errs == 0 && fired, "%d errors over %d points; every failpoint fired: %v", errs, len(faults), fired)
	return rep
}

func find(rows []row, config, kind string, replicas, clients int) (row, bool) {
	for _, r := range rows {
		if r.Config == config && r.Kind == kind && r.Replicas == replicas && r.Clients == clients {
			return r, true
		}
	}
	return row{}, false
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// throughputTarget is the ordered requests/s target's name.
const throughputTarget = "at least 1,000 ordered requests/s with 8 concurrent clients (single-node engine)"

// growthTarget is the RTT growth target's name.
const growthTarget = "RTT growth from 2 to 4 replicas ≤ 20% (testbed, 0.25-core replicas)"

// growth is the RTT growth from 2 to 4 replicas, 1 plain client, p50s:
// the two rows and the growth in per cent; false when either point was
// not measured (--replicas below 4, or no plain 1-client row).
func growth(rows []row) (two, four row, pct float64, ok bool) {
	two, ok2 := find(rows, configReplicated, plain, 2, 1)
	four, ok4 := find(rows, configReplicated, plain, 4, 1)
	if !ok2 || !ok4 || two.RTTP50MS <= 0 {
		return two, four, 0, false
	}
	return two, four, 100 * (four.RTTP50MS/two.RTTP50MS - 1), true
}

// reportGrowth writes the RTT growth from 2 to 4 replicas and its target:
// judged on the testbed only (on loopback every process shares the
// machine's cores, and it mostly measures their oversubscription).
func reportGrowth(rep *bench.Report, rows []row, onTestbed bool) {
	two, four, pct, ok := growth(rows)
	if !onTestbed {
		if ok {
			rep.Para("RTT growth from 2 to 4 replicas (1 plain client, p50): %.3f → %.3f ms (%+.1f%%). On this machine every replica, agent, the balancer and the clients share its cores; the target is for the testbed (`--testbed`).", two.RTTP50MS, four.RTTP50MS, pct)
		}
		rep.TargetUnknown(growthTarget, "measured on the testbed (--testbed), not by this run")
		return
	}
	if !ok {
		rep.TargetUnknown(growthTarget, "no 4-replica point (--replicas below 4)")
		return
	}
	rep.Para("RTT growth from 2 to 4 replicas on the testbed (1 plain client, p50): %.3f → %.3f ms (%+.1f%%).", two.RTTP50MS, four.RTTP50MS, pct)
	rep.Target(growthTarget, pct <= 20, "%.3f → %.3f ms, %+.1f%% (at most +20%%)", two.RTTP50MS, four.RTTP50MS, pct)
}
