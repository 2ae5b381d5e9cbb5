package monitor

import (
	"math"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ExternalMetrics supplies the standard metrics (the protocol.Metric* keys:
// inflight, rps, latency_ms, cpu, utilization, eps, bw) of a replica that a
// monitor measures from outside, over the report window ending at now. It
// is called once per report (push) or pull, under the monitor's report
// lock, so it must not block for long; it may omit metrics it has no value
// for. NaN, infinite and negative values are dropped.
type ExternalMetrics func(now time.Time) map[string]float64

// NewExternal returns a monitor for a replica it does not sit in front of:
// a side-car agent beside an unmodified server (fulcrum agent http beside
// NGINX). Such a monitor sees none of the replica's calls, so its own
// counters and its own process's CPU would describe the agent, not the
// replica: every report's metrics come from metrics instead, and the load
// is the metric Options.Load names (rate: rps, inflight: inflight, cpu:
// cpu, latency: latency_ms; 0 when metrics omits it) or Options.LoadFunc.
// Registration, push and pull reporting, advisories and deregistration are
// those of New. A report lists no clients (no bound call passes through
// the monitor), so advisories cannot send clients back: the balancer moves
// load by its picks alone.
func NewExternal(opts Options, metrics ExternalMetrics) (*Monitor, error) {
	if metrics == nil {
		return nil, invalid("metrics", "must not be nil")
	}
	m, err := New(opts)
	if err != nil {
		return nil, err
	}
	m.external = metrics
	return m, nil
}

// closeExternalWindowLocked is closeWindowLocked for a monitor made by
// NewExternal. Caller must hold m.reportMu.
func (m *Monitor) closeExternalWindowLocked(now time.Time) protocol.Report {
	if now.Sub(m.win.start) <= 0 {
		return m.last
	}
	m.win.start = now
	raw := m.external(now)
	metrics := make(map[string]float64, len(raw))
	for k, v := range raw {
		if k != "" && !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
			if protocol.IsShareMetric(k) {
				v = min(v, 1) // the balancer refuses shares far above 1
			}
			metrics[k] = v
		}
	}
	var load float64
	switch {
	case m.opts.LoadFunc != nil:
		load = m.opts.LoadFunc()
	case m.opts.Load == LoadInflight:
		load = metrics[protocol.MetricInflight]
	case m.opts.Load == LoadCPU:
		load = metrics[protocol.MetricCPU]
	case m.opts.Load == LoadLatency:
		load = metrics[protocol.MetricLatencyMS]
	default:
		load = metrics[protocol.MetricRPS]
	}
	if math.IsNaN(load) || math.IsInf(load, 0) || load < 0 {
		load = 0
	}
	load = min(load, protocol.MaxLoad)
	if lat, ok := metrics[protocol.MetricLatencyMS]; ok {
		m.latency, m.haveLatency = lat, true
	}
	m.rates = nil
	m.last = protocol.Report{Load: load, Metrics: metrics}
	return m.last
}
