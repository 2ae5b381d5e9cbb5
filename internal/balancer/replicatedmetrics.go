package balancer

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// Results of an append, the label of fulcrum_replicated_appends_total.
const (
	appendNew       = "appended"
	appendDuplicate = "duplicate"
	appendRefused   = "refused" // too large, log full, bad session
	appendFailed    = "error"
)

// replicatedMetrics are the replicated groups' figures on /metrics.
type replicatedMetrics struct {
	appends   *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	divergent *prometheus.CounterVec
}

func newReplicatedMetrics() *replicatedMetrics {
	return &replicatedMetrics{
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fulcrum_replicated_appends_total",
			Help: "Appends to a replicated group's log by this instance, by result: appended (a new entry), duplicate (the request was appended before), refused (too large, log full, bad session), error.",
		}, []string{"group", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fulcrum_replicated_append_seconds",
			Help:    "Time an append to a replicated group's log took (ordering and, on a single node, the fsync), appended and duplicate results.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"group"}),
		divergent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fulcrum_replicated_divergent_replies_total",
			Help: "Replies of a replica of a replicated group that differed from the majority's (or, with two replicas, from the other one's).",
		}, []string{"group", "replica"}),
	}
}

// Describe implements prometheus.Collector.
func (m *replicatedMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.appends.Describe(ch)
	m.latency.Describe(ch)
	m.divergent.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *replicatedMetrics) Collect(ch chan<- prometheus.Metric) {
	m.appends.Collect(ch)
	m.latency.Collect(ch)
	m.divergent.Collect(ch)
}

// ReplicatedMetrics exports fulcrum_replicated_appends_total,
// fulcrum_replicated_append_seconds and
// fulcrum_replicated_divergent_replies_total.
func (b *Balancer) ReplicatedMetrics() prometheus.Collector { return b.replMetrics }

// meteredLog counts a group's appends and times them.
type meteredLog struct {
	replog.Log
	m     *replicatedMetrics
	group string
	now   func() time.Time
}

// AppendOrGet implements replog.Log.
func (l *meteredLog) AppendOrGet(ctx context.Context, a replog.Append) (uint64, bool, error) {
	start := l.now()
	pos, existed, err := l.Log.AppendOrGet(ctx, a)
	result := appendNew
	switch {
	case errors.Is(err, replog.ErrPayloadTooLarge), errors.Is(err, replog.ErrLogFull), errors.Is(err, replog.ErrBadSession):
		result = appendRefused
	case err != nil:
		result = appendFailed
	case existed:
		result = appendDuplicate
	}
	l.m.appends.WithLabelValues(l.group, result).Inc()
	if err == nil {
		l.m.latency.WithLabelValues(l.group).Observe(l.now().Sub(start).Seconds())
	}
	return pos, existed, err
}
