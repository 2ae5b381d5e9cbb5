package balancer

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// workerReport is the latest report of one worker of a multi-process
// replica and when it arrived.
type workerReport struct {
	at  time.Time
	rep protocol.Report
}

// How combineWorkers combines each standard metric of the workers'
// reports; other metrics get their plain mean over the workers that sent
// them.
var (
	// summedMetrics add up over the workers.
	summedMetrics = []string{
		protocol.MetricInflight, protocol.MetricRPS, protocol.MetricEPS,
		protocol.MetricCPU, protocol.MetricCPUOther, protocol.MetricBW,
		protocol.MetricBoundClients,
	}
	// rpsWeightedMetrics are averaged weighted by each worker's rps
	// (equal weights when every worker that sent one has rps 0 or none).
	rpsWeightedMetrics = []string{
		protocol.MetricLatencyMS, protocol.MetricUtilization,
		protocol.MetricLatencyP50MS, protocol.MetricLatencyP99MS,
	}
)

// combineWorkers is the report of a multi-process replica made of the
// latest report of each of its workers (docs/api.md "Multi-process
// replicas"). A report older than stale at now is left out; fresh is how
// many were combined (0: none, and the report is zero). The load, and
// inflight, rps, eps, cpu, cpu_other, bw and bound_clients, are sums;
// latency_ms, utilization, latency_p50_ms and latency_p99_ms are averages
// weighted by rps (equal weights when all are 0); share metrics are then
// clamped to 1 and the load and rates to their bounds
// (protocol.MaxLoad, protocol.MaxRate). Clients are merged by id, their
// rates summed, and the busiest protocol.MaxReportClients kept (busiest
// first, ties by id). The result has no Worker. Pure.
func combineWorkers(reports map[int]workerReport, now time.Time, stale time.Duration) (combined protocol.Report, fresh int) {
	idx := make([]int, 0, len(reports))
	for i, wr := range reports {
		if now.Sub(wr.at) <= stale {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return protocol.Report{}, 0
	}
	slices.Sort(idx) // the same float sums every time
	reps := make([]protocol.Report, len(idx))
	for k, i := range idx {
		reps[k] = reports[i].rep
	}

	metrics := map[string]float64{}
	for _, r := range reps {
		combined.Load += r.Load
		for _, key := range summedMetrics {
			if v, ok := r.Metrics[key]; ok {
				metrics[key] += v
			}
		}
	}
	combined.Load = math.Min(combined.Load, protocol.MaxLoad)
	for _, key := range rpsWeightedMetrics {
		if v, ok := rpsWeighted(reps, key); ok {
			metrics[key] = v
		}
	}
	for _, key := range otherMetrics(reps) {
		sum, n := 0.0, 0
		for _, r := range reps {
			if v, ok := r.Metrics[key]; ok {
				sum, n = sum+v, n+1
			}
		}
		metrics[key] = sum / float64(n)
	}
	for key, v := range metrics {
		if protocol.IsShareMetric(key) {
			metrics[key] = math.Min(v, 1)
		}
	}
	if len(metrics) > 0 {
		combined.Metrics = metrics
	}
	combined.Clients = mergeClients(reps)
	return combined, len(idx)
}

// rpsWeighted is the rps-weighted average of metric key over the reports
// that have it (false when none has it); equal weights when their rps
// add up to 0.
func rpsWeighted(reps []protocol.Report, key string) (float64, bool) {
	var sum, weights, plain float64
	n := 0
	for _, r := range reps {
		v, ok := r.Metrics[key]
		if !ok {
			continue
		}
		w := max(r.Metrics[protocol.MetricRPS], 0)
		sum += w * v
		weights += w
		plain += v
		n++
	}
	switch {
	case n == 0:
		return 0, false
	case weights > 0:
		return sum / weights, true
	default:
		return plain / float64(n), true
	}
}

// otherMetrics are the metric keys of reps that are neither summed nor
// rps-weighted, sorted.
func otherMetrics(reps []protocol.Report) []string {
	seen := map[string]struct{}{}
	for _, r := range reps {
		for key := range r.Metrics {
			if !slices.Contains(summedMetrics, key) && !slices.Contains(rpsWeightedMetrics, key) {
				seen[key] = struct{}{}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// mergeClients merges the reports' clients by id, summing their rates,
// and keeps the busiest protocol.MaxReportClients (busiest first, ties by
// id); nil when no report lists any.
func mergeClients(reps []protocol.Report) []protocol.ClientRate {
	rates := map[string]float64{}
	for _, r := range reps {
		for _, c := range r.Clients {
			rates[c.ID] += c.Rate
		}
	}
	if len(rates) == 0 {
		return nil
	}
	out := make([]protocol.ClientRate, 0, len(rates))
	for id, rate := range rates {
		out = append(out, protocol.ClientRate{ID: id, Rate: math.Min(rate, protocol.MaxRate)})
	}
	return busiest(out)
}

// busiest sorts rates busiest first (ties by id) and keeps the first
// protocol.MaxReportClients.
func busiest(rates []protocol.ClientRate) []protocol.ClientRate {
	slices.SortFunc(rates, func(a, b protocol.ClientRate) int {
		if c := cmp.Compare(b.Rate, a.Rate); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return rates[:min(len(rates), protocol.MaxReportClients)]
}

// workerShed is one worker's part of a replica's shed when the advisory
// names no clients: shed × the worker's load / the combined load (an
// equal part of fresh workers when the combined load is 0), so that the
// workers together shed the replica's shed once, not once each.
func workerShed(shed, workerLoad, combinedLoad float64, fresh int) float64 {
	switch {
	case shed <= 0:
		return shed
	case combinedLoad > 0:
		return shed * math.Min(workerLoad/combinedLoad, 1)
	case fresh > 0:
		return shed / float64(fresh)
	default:
		return shed
	}
}
