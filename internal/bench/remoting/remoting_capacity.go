package remoting

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// How "90%" is meant (--load-from). The .NET Remoting paper §V and the issue set the
// offered load as a share of the group's capacity: the calls per second
// the replicas answer when saturated. The replicas' CPU per call is not
// the same at every load, though: a replica at 90% of its quota spends
// more CPU per call than saturated (waking for each call instead of
// finding the next one queued; the measurements are in docs/bench.md). A
// load set as a share of the CPU quota is then less than that share of
// the capacity, and random's mean lands well below the M/M/1 figure at
// the share asked. Against the capacity,
// the bench measures it again right before every round (a core of this
// shared machine is up to 20% faster or slower from one minute to the
// next) and once after the last, and sets each round's gap from the
// latest measurement.
const (
	// RemotingLoadCapacity sets the offered load as a share of the
	// group's capacity, measured before every round (the default).
	RemotingLoadCapacity = "capacity"
	// RemotingLoadCPU sets it as a share of the group's CPU quota, from
	// the replicas' CPU time per call (remoting_cpu.go).
	RemotingLoadCPU = "cpu"
)

// saturate measures the group's capacity (measureCapacity, remoting
// CapacityCallers per replica for d, draws from seed) together with the
// replicas' CPU time meanwhile. A measurement in which the replicas used
// less than remotingMinCapacityCPU of their quotas (something else on
// the machine stalled the callers) is taken again, up to
// remotingCapacityAttempts times; a smoke run keeps the first.
func (x *Remoting) saturate(ctx context.Context, env *bench.Env, cl *remotingCluster, d time.Duration, seed uint64) (remotingCapacity, time.Duration, error) {
	for attempt := 1; ; attempt++ {
		u0, err := cl.cpuUsage()
		if err != nil {
			return remotingCapacity{}, 0, err
		}
		c, err := measureCapacity(ctx, cl.bases, remotingCapacityCallers, x.XMean, d, seed+uint64(attempt-1)<<8)
		if err != nil {
			return c, 0, err
		}
		u1, err := cl.cpuUsage()
		if err != nil {
			return c, 0, err
		}
		cpu := u1 - u0
		err = remotingCapacityValid(cpu.Seconds() / c.Elapsed.Seconds() / x.CPU)
		if err == nil || env.Size == bench.Smoke {
			if u := unequalReplicas(c); u != "" {
				env.Logf("remoting: %d replicas saturated: %s", len(cl.bases), u)
			}
			return c, cpu, nil
		}
		if attempt == remotingCapacityAttempts {
			return c, cpu, fmt.Errorf("%d replicas: %w (%d attempts)", len(cl.bases), err, attempt)
		}
		env.Logf("remoting: %d replicas: %v; measuring again", len(cl.bases), err)
	}
}

// quotaPerX is the group's quota time per unit of X at capacity c (ns):
// in place of the CPU estimate, it makes remotingPlan offer the share u
// of the X the group answers per second when saturated.
func (x *Remoting) quotaPerX(c remotingCapacity) float64 {
	xs := c.xPerSec()
	if !(xs > 0) {
		return 0
	}
	return x.CPU * float64(time.Second) / xs
}

// capacityNote is the log's note on the capacity the next round's gap was
// set from: "" against the CPU quota.
func (x *Remoting) capacityNote(caps []remotingCapacity) string {
	if len(caps) == 0 {
		return ""
	}
	return fmt.Sprintf(", capacity now %.0f calls/s", caps[len(caps)-1].rps())
}

// sumX is the sum of the X of every client's calls.
func sumX(clients [][]remotingCall) int64 {
	var s int64
	for _, c := range clients {
		for _, call := range c {
			s += int64(call.X)
		}
	}
	return s
}

// capacityUtilization is the share of the capacity the rounds offered:
// round k offered the calls of X sum offeredX[k] over windows[k], and
// the capacity then was the mean of the measurements right before and
// right after it (caps[k], caps[k+1]). NaN without a measurement on both
// sides of every round.
func capacityUtilization(offeredX []float64, windows []time.Duration, caps []remotingCapacity) float64 {
	offered, capable := capacityOffer(offeredX, windows, caps)
	if !(capable > 0) {
		return math.NaN()
	}
	return offered / capable
}

// capacityOffer is capacityUtilization's two sides: the X the rounds
// offered and the X the capacity around them could answer in their
// windows; 0, 0 without a measurement on both sides of every round.
func capacityOffer(offeredX []float64, windows []time.Duration, caps []remotingCapacity) (offered, capable float64) {
	if len(offeredX) == 0 || len(windows) != len(offeredX) || len(caps) != len(offeredX)+1 {
		return 0, 0
	}
	for k := range offeredX {
		offered += offeredX[k]
		capable += windows[k].Seconds() * (caps[k].xPerSec() + caps[k+1].xPerSec()) / 2
	}
	if !(capable > 0) {
		return 0, 0
	}
	return offered, capable
}

// remotingCapacityFlag says why a sample whose load was set against the
// capacity does not count as one at target: its rounds offered
// loadVsCapacity of the capacity measured around them (it moved during
// the sample), or the replicas' CPU time over the offer windows came to
// more than their quotas (cpuMeasured above 1: the calls could not all be
// served within the window, the queues grew). Empty when it counts.
func remotingCapacityFlag(target, loadVsCapacity, cpuMeasured float64) string {
	switch {
	case math.IsNaN(loadVsCapacity) || loadVsCapacity <= 0 || math.IsNaN(cpuMeasured) || cpuMeasured <= 0:
		return "load not measured"
	case cpuMeasured > 1:
		return fmt.Sprintf("overloaded: replicas at %.0f%% of their quotas, %.0f%% of the capacity asked", cpuMeasured*100, target*100)
	case math.Abs(loadVsCapacity-target) > remotingLoadTolerance:
		return fmt.Sprintf("capacity moved: %.0f%% of the capacity measured around the rounds offered, %.0f%% asked", loadVsCapacity*100, target*100)
	}
	return ""
}

// remotingUnequalShare is the share of the median replica's capacity
// below which a replica breaks the experiment's premise of equal
// replicas. On a quiet machine the replicas' shares of one saturation
// burst lie within a few percent; now and then one replica of a group
// answers about half as fast as the others for its whole life, which
// overloads random and nothing else (how often: docs/bench.md).
const remotingUnequalShare = 0.8

// unequalReplicas names the replicas whose answered X in c came to less
// than remotingUnequalShare of the median replica's: "" when there is
// none (or c has no per-replica figures).
func unequalReplicas(c remotingCapacity) string {
	if len(c.ReplicaXSum) < 2 {
		return ""
	}
	xs := make([]float64, len(c.ReplicaXSum))
	for i, v := range c.ReplicaXSum {
		xs[i] = float64(v)
	}
	med := stats.Median(xs)
	if !(med > 0) {
		return ""
	}
	var slow []string
	for i, v := range xs {
		if v < remotingUnequalShare*med {
			slow = append(slow, fmt.Sprintf("replica %d at %.0f%%", i+1, v/med*100))
		}
	}
	if len(slow) == 0 {
		return ""
	}
	return "unequal replicas: " + strings.Join(slow, ", ") + " of the median replica's capacity"
}

// joinFlags joins the non-empty flags with "; ".
func joinFlags(flags ...string) string {
	var out []string
	for _, f := range flags {
		if f != "" {
			out = append(out, f)
		}
	}
	return strings.Join(out, "; ")
}
