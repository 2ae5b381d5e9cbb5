package remoting

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// The remoting bench sets its offered load from the replicas' own CPU
// accounting (their cgroups), not from a capacity measured once per group
// size: a core of this shared machine does a call's work 20% faster or
// slower from one minute to the next (a capacity measured once made
// "90%" offer more than the quotas; docs/bench.md). The utilisation is the queueing one,
// ρ = calls/s × CPU per call ÷ the group's quota, and the bench steers it
// with an estimate of the replicas' CPU time per unit of X (a call's work
// is nearly proportional to X, so the estimate does not move with the X
// that happen to be drawn), updated from every run through the balancer.

const (
	// remotingLoadTolerance is how far a sample's measured utilisation
	// may be from the one asked before it is flagged.
	remotingLoadTolerance = 0.05
	// remotingSaturated is the measured utilisation at which the replicas
	// count as saturated: their queues grow for the whole sample and the
	// order in which they drain decides the mean.
	remotingSaturated = 0.97
	// remotingMaxStep bounds how far one measurement may move the CPU
	// estimate (a factor either way), so that a run disturbed by
	// something else on the machine cannot set the next one wildly off.
	remotingMaxStep = 2.0
)

// remotingCPUPerX is the replicas' CPU time per unit of X (ns) measured
// while calls whose X add up to xSum were answered, and false when the
// measurement holds nothing to go by.
func remotingCPUPerX(cpu time.Duration, xSum int64) (float64, bool) {
	if cpu <= 0 || xSum <= 0 {
		return 0, false
	}
	return float64(cpu) / float64(xSum), true
}

// nextCPUPerX is the estimate to set the next run from: the latest
// measurement, kept within a factor remotingMaxStep of the previous
// estimate; the previous estimate when the measurement is unusable.
func nextCPUPerX(prev, measured float64, ok bool) float64 {
	if !ok || !(measured > 0) || math.IsInf(measured, 0) {
		return prev
	}
	if !(prev > 0) || math.IsInf(prev, 0) {
		return measured
	}
	return min(max(measured, prev/remotingMaxStep), prev*remotingMaxStep)
}

// remotingGap is the mean gap between a client's calls with which
// clients clients offer the share u of quota cores, when calls of mean X
// xMean cost cpuPerX ns of replica CPU per unit of X: the group's rate is
// u·quota / (xMean·cpuPerX) calls per second. Zero when an input is not
// positive.
func remotingGap(u, quota float64, clients int, xMean, cpuPerX float64) time.Duration {
	if !(u > 0 && quota > 0 && xMean > 0 && cpuPerX > 0) || clients <= 0 {
		return 0
	}
	perCall := xMean * cpuPerX // ns of CPU
	rate := u * quota * float64(time.Second) / perCall
	return time.Duration(math.Round(float64(clients) / rate * float64(time.Second)))
}

// fitSpan rescales the gaps of a client's calls so that the last call is
// sent at exactly len(calls)·gap: the Poisson arrivals conditioned on
// their span (the calls in between stay where the exponential draws put
// them, in proportion), so that every client offers exactly its share of
// the rate for the whole sample and they all stop together.
func fitSpan(calls []remotingCall, gap time.Duration) {
	if len(calls) == 0 {
		return
	}
	span := float64(gap) * float64(len(calls))
	var total float64
	for _, c := range calls {
		total += float64(c.Gap)
	}
	var cum float64
	prev := time.Duration(0)
	for i := range calls {
		var at time.Duration
		switch {
		case i == len(calls)-1:
			at = time.Duration(math.Round(span))
		case total > 0:
			cum += float64(calls[i].Gap)
			at = time.Duration(math.Round(cum / total * span))
		default: // every draw was 0: spread the calls evenly
			at = time.Duration(math.Round(span * float64(i+1) / float64(len(calls))))
		}
		calls[i].Gap = at - prev
		prev = at
	}
}

// remotingPlan draws the calls of clients clients, calls each (client c
// from seed seed|c, as remotingSample), and the mean gap with which
// they offer the share u of quota cores given the estimate cpuPerX (ns
// of replica CPU per unit of X) and the X actually drawn; every client's
// gaps are fitted to span calls·gap. It returns the calls and the gap;
// a zero gap means the inputs could not make one.
func remotingPlan(seed uint64, clients, calls int, xMean, u, quota, cpuPerX float64) ([][]remotingCall, time.Duration) {
	out := make([][]remotingCall, clients)
	var xSum float64
	var n int
	for c := range out {
		// The draws of X do not depend on the gap's mean (the same
		// source draws X, then the gap, call after call).
		out[c] = remotingSample(seed|uint64(c), calls, xMean, time.Millisecond)
		for _, call := range out[c] {
			xSum += float64(call.X)
			n++
		}
	}
	if n == 0 || xSum <= 0 {
		return out, 0
	}
	gap := remotingGap(u, quota, clients, xSum/float64(n), cpuPerX)
	if gap <= 0 {
		return out, 0
	}
	for _, c := range out {
		fitSpan(c, gap)
	}
	return out, gap
}

// remotingUtilization is the utilisation a run reached: the replicas'
// CPU time over the window in which the calls were offered (from the
// start to the last call's send time) as a share of quota cores. It is
// calls/s × CPU per call ÷ quota for the calls offered in the window,
// and goes above 1 when more was offered than the quotas can serve
// (the calls then finish after the window).
func remotingUtilization(cpu, window time.Duration, quota float64) float64 {
	if window <= 0 || !(quota > 0) {
		return 0
	}
	return cpu.Seconds() / window.Seconds() / quota
}

// remotingLoadFlag says why a sample at measured utilisation measured,
// asked for target, does not count as a sample at target: empty when it
// does.
func remotingLoadFlag(target, measured float64) string {
	switch {
	case math.IsNaN(measured) || measured <= 0:
		return "load not measured"
	case measured >= remotingSaturated && target < remotingSaturated:
		return fmt.Sprintf("saturated: replicas at %.0f%% of their quotas, %.0f%% asked", measured*100, target*100)
	case measured > target+remotingLoadTolerance:
		return fmt.Sprintf("overloaded: %.0f%% of the quotas, %.0f%% asked", measured*100, target*100)
	case measured < target-remotingLoadTolerance:
		return fmt.Sprintf("underloaded: %.0f%% of the quotas, %.0f%% asked", measured*100, target*100)
	}
	return ""
}

// calibrate runs a short unrecorded sample of group size n at
// utilisation u (the ui-th) through the balancer, set from the CPU
// estimate est, and returns the estimate updated from the CPU per unit
// of X it measured.
func (x *Remoting) calibrate(ctx context.Context, env *bench.Env, cl *remotingCluster, n, ui int, u float64, s remotingSizes, clients int, est float64) (float64, error) {
	calCalls := max(s.calls/s.rounds/2, 5)
	calClients, calGap := remotingPlan(1<<41|uint64(n)<<32|uint64(ui)<<24, clients, calCalls, x.XMean, u, x.CPU, est)
	if calGap <= 0 {
		return est, fmt.Errorf("calibration at %.0f%%: no gap from a CPU estimate of %g ns per unit of X", u*100, est)
	}
	cal, err := cl.runMetered(ctx, calClients)
	if err != nil {
		return est, err
	}
	m, ok := remotingCPUPerX(cal.cpu, cal.res.XSum)
	next := nextCPUPerX(est, m, ok)
	env.Logf("remoting: %d replicas, %.0f%%: calibration at %.0f calls/s reached %.0f%% of the quotas (CPU per call %.3f ms at X mean %g: estimate %.3f → %.3f)",
		n, u*100, float64(clients)/calGap.Seconds(), remotingUtilization(cal.cpu, calGap*time.Duration(calCalls), x.CPU)*100,
		m*x.XMean/1e6, x.XMean, est*x.XMean/1e6, next*x.XMean/1e6)
	return next, nil
}
