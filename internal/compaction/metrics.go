package compaction

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the compaction's figures, a prometheus.Collector for the
// registry that serves /metrics:
//
//   - fulcrum_store_etcd_compacted_revision: the revision this instance
//     last compacted etcd to (or found it compacted to), 0 until it does;
//     only the instance that compacts (the "_compact" election's leader)
//     moves it;
//   - fulcrum_store_etcd_compaction_errors_total{op}: failures, op publish
//     (writing this instance's lowest needed revision), read (reading
//     every instance's) or compact (etcd's compaction).
//
// A nil *Metrics records nothing. Safe for concurrent use.
type Metrics struct {
	revision prometheus.Gauge
	errors   *prometheus.CounterVec
}

// Ops of fulcrum_store_etcd_compaction_errors_total.
const (
	opPublish = "publish"
	opRead    = "read"
	opCompact = "compact"
)

// NewMetrics returns the collector.
func NewMetrics() *Metrics {
	m := &Metrics{
		revision: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fulcrum_store_etcd_compacted_revision",
			Help: "The revision this instance last compacted etcd's history to (0: none yet).",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fulcrum_store_etcd_compaction_errors_total",
			Help: "Failures of etcd compaction, by op (publish: this instance's lowest needed revision; read: every instance's; compact: etcd's compaction).",
		}, []string{"op"}),
	}
	for _, op := range []string{opPublish, opRead, opCompact} {
		m.errors.WithLabelValues(op)
	}
	return m
}

func (m *Metrics) compacted(rev int64) {
	if m != nil {
		m.revision.Set(float64(rev))
	}
}

func (m *Metrics) failed(op string) {
	if m != nil {
		m.errors.WithLabelValues(op).Inc()
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.revision.Describe(ch)
	m.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.revision.Collect(ch)
	m.errors.Collect(ch)
}
