package protocol

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Bounds of the numbers in a Report. A load or rate above them is no
// measurement but a broken monitor, and the balancer sums loads and rates
// over a group's replicas: bounding each keeps every sum finite (two loads
// of 1e308 add up to +Inf).
const (
	// MaxLoad bounds a report's load.
	MaxLoad = 1e12
	// MaxRate bounds a client's call rate (calls/s).
	MaxRate = 1e12
	// MaxShare is the largest share metric accepted: a share is 0–1, and
	// what a monitor measures over a window can exceed 1 a little (clock
	// jitter between the CPU counter and the wall clock). Values in
	// (1, MaxShare] are clamped to 1; larger ones are refused.
	MaxShare = 1.5
)

// IsShareMetric reports whether the standard metric key is a share of a
// capacity (0–1): cpu, utilization, bw and cpu_other.
func IsShareMetric(key string) bool {
	switch key {
	case MetricCPU, MetricUtilization, MetricBW, MetricCPUOther:
		return true
	}
	return false
}

// checkBounds checks what Validate leaves to it: the load and client rates
// at most their Max, share metrics in [0, MaxShare]. The numbers are
// finite already.
func (r *Report) checkBounds() error {
	if r.Load > MaxLoad {
		return &FieldError{Field: "load", Value: r.Load, Allowed: fmt.Sprintf("must be a finite number in [0, %g]", float64(MaxLoad))}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Metrics)) { // the same error every time
		if v := r.Metrics[k]; IsShareMetric(k) && !(v >= 0 && v <= MaxShare) {
			return &FieldError{Field: "metrics." + k, Value: v, Allowed: fmt.Sprintf("must be a share in [0, 1] (up to %g is taken as 1)", MaxShare)}
		}
	}
	for _, k := range []string{MetricLatencyP50MS, MetricLatencyP99MS, MetricBoundClients} {
		if err := checkStatusMetric(k, r.Metrics); err != nil {
			return err
		}
	}
	for i, c := range r.Clients {
		if c.Rate > MaxRate {
			return &FieldError{Field: fmt.Sprintf("clients[%d].rate", i), Value: c.Rate, Allowed: fmt.Sprintf("must be a finite number of calls/s in [0, %g]", float64(MaxRate))}
		}
	}
	return nil
}

// clampShares sets share metrics above 1 (at most MaxShare, as checked) to
// 1.
func (r *Report) clampShares() {
	for k, v := range r.Metrics {
		if IsShareMetric(k) {
			r.Metrics[k] = math.Min(v, 1)
		}
	}
}

// MaxBoundClients bounds a report's bound_clients metric.
const MaxBoundClients = 1e9

// MaxLatencyMS bounds a report's latency quantiles (ms): about a day.
const MaxLatencyMS = 1e8

// checkStatusMetric checks one of the optional metrics a replica's status
// shows (latency_p50_ms, latency_p99_ms, bound_clients) when the report
// has it: latencies in [0, MaxLatencyMS], bound_clients a whole number in
// [0, MaxBoundClients]. The number is finite already.
func checkStatusMetric(k string, metrics map[string]float64) error {
	v, ok := metrics[k]
	if !ok {
		return nil
	}
	if k == MetricBoundClients {
		if !(v >= 0 && v <= MaxBoundClients) || v != math.Trunc(v) {
			return &FieldError{Field: "metrics." + k, Value: v, Allowed: fmt.Sprintf("must be a whole number of clients in [0, %g]", float64(MaxBoundClients))}
		}
		return nil
	}
	if !(v >= 0 && v <= MaxLatencyMS) {
		return &FieldError{Field: "metrics." + k, Value: v, Allowed: fmt.Sprintf("must be a latency in milliseconds in [0, %g]", float64(MaxLatencyMS))}
	}
	return nil
}
