package etcdstore

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Metrics are the etcd store's Prometheus metrics. A Store given one
// (Options.Metrics) records every request it makes in it; register the
// Metrics itself (a prometheus.Collector) where /metrics is served. One
// Metrics serves one Store. Safe for concurrent use; a nil *Metrics
// records nothing.
//
//   - fulcrum_store_etcd_request_seconds{op}: latency of the store's etcd
//     requests, op get, list, txn or watch_open (the read that checks a
//     watch's start revision, and the watch's creation), failures included;
//   - fulcrum_store_etcd_writes_total{op}: the etcd transactions this
//     process's store committed — op put (one put, no condition), delete
//     (one delete, no condition) or txn (anything else: conditioned,
//     guarded by TxnIf, or made through KV) — each one raft proposal
//     whether its conditions held or not; compare its rate with etcd's
//     etcd_server_proposals_committed_total;
//   - fulcrum_store_up: 1 while etcd is reachable (the last request or
//     check succeeded), 0 while it is not;
//   - fulcrum_store_watch_lag_seconds: how long the store's watches took,
//     at the last check, to deliver up to the revision etcd answered the
//     check with (health.go); it grows while a watch delivers nothing past
//     a revision etcd has committed, and is 0 before the first
//     measurement or with no watch open.
type Metrics struct {
	latency *prometheus.HistogramVec
	writes  *prometheus.CounterVec

	upDesc, lagDesc *prometheus.Desc
	// st is the store the gauges are read from, set by Open.
	st atomic.Pointer[Store]
}

// Ops of fulcrum_store_etcd_request_seconds.
const (
	opGet       = "get"
	opList      = "list"
	opTxn       = "txn"
	opWatchOpen = "watch_open"
)

// NewMetrics returns metrics for one store (to pass as Options.Metrics).
func NewMetrics() *Metrics {
	m := &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fulcrum_store_etcd_request_seconds",
			Help:    "Latency of the store's etcd requests by op (get, list, txn, watch_open), failures included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fulcrum_store_etcd_writes_total",
			Help: "etcd transactions this process's store committed, by op (put, delete: one op without condition; txn: any other).",
		}, []string{"op"}),
		upDesc:  prometheus.NewDesc("fulcrum_store_up", "1 while etcd is reachable (the store's last request or check succeeded), else 0.", nil, nil),
		lagDesc: prometheus.NewDesc("fulcrum_store_watch_lag_seconds", "Time the store's watch took, at the last check, to deliver up to the revision etcd answered the check with; grows while it lags.", nil, nil),
	}
	for _, op := range []string{opGet, opList, opTxn, opWatchOpen} {
		m.latency.WithLabelValues(op)
	}
	for _, op := range []string{"put", "delete", "txn"} {
		m.writes.WithLabelValues(op)
	}
	return m
}

// Metrics returns the store's metrics (Options.Metrics; nil when none).
func (s *Store) Metrics() *Metrics { return s.opts.Metrics }

// observe records a request of op that took d.
func (m *Metrics) observe(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.latency.WithLabelValues(op).Observe(d.Seconds())
}

// committed counts a transaction etcd answered.
func (m *Metrics) committed(conds []store.Cond, ops []store.Op) {
	m.wrote(writeOp(conds, ops))
}

// wrote counts a write of op (put, delete or txn) etcd answered.
func (m *Metrics) wrote(op string) {
	if m == nil {
		return
	}
	m.writes.WithLabelValues(op).Inc()
}

// writeOp names a transaction for fulcrum_store_etcd_writes_total.
func writeOp(conds []store.Cond, ops []store.Op) string {
	if len(conds) == 0 && len(ops) == 1 {
		switch ops[0].Kind {
		case store.OpPut:
			return "put"
		case store.OpDelete:
			return "delete"
		}
	}
	return "txn"
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.latency.Describe(ch)
	m.writes.Describe(ch)
	ch <- m.upDesc
	ch <- m.lagDesc
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.latency.Collect(ch)
	m.writes.Collect(ch)
	s := m.st.Load()
	if s == nil {
		return
	}
	up, lag := 1.0, s.health.lag(time.Now())
	if s.Unreachable() != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(m.upDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(m.lagDesc, prometheus.GaugeValue, lag.Seconds())
}
