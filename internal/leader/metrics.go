package leader

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the leadership figures of one instance, a
// prometheus.Collector for the registry that serves /metrics:
//
//   - fulcrum_leadership_changes_total{group,to}: this instance's
//     transitions into each state (to = leader, deposed, follower,
//     candidate); elected = to="leader", lost = to="deposed";
//   - fulcrum_leader{group}: 1 while this instance leads the group.
//
// A nil *Metrics records nothing. Safe for concurrent use.
type Metrics struct {
	changes *prometheus.CounterVec
	leading *prometheus.GaugeVec
}

// NewMetrics returns the collector, with no series yet.
func NewMetrics() *Metrics {
	return &Metrics{
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fulcrum_leadership_changes_total",
			Help: "Transitions of this instance's standing in a group's analyzer election, by the state entered.",
		}, []string{"group", "to"}),
		leading: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fulcrum_leader",
			Help: "1 while this instance is the analyzer leader of the group.",
		}, []string{"group"}),
	}
}

// Record counts a change.
func (m *Metrics) Record(ch Change) {
	if m == nil {
		return
	}
	m.changes.WithLabelValues(ch.Group, ch.To.String()).Inc()
	v := 0.0
	if ch.To == Leader {
		v = 1
	}
	m.leading.WithLabelValues(ch.Group).Set(v)
}

// Forget drops a group's series (the group was deleted).
func (m *Metrics) Forget(group string) {
	if m == nil {
		return
	}
	m.changes.DeletePartialMatch(prometheus.Labels{"group": group})
	m.leading.DeleteLabelValues(group)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.changes.Describe(ch)
	m.leading.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.changes.Collect(ch)
	m.leading.Collect(ch)
}

// Changes is the counter of group's changes to state to (for tests and
// the status page).
func (m *Metrics) Changes(group string, to State) prometheus.Counter {
	return m.changes.WithLabelValues(group, to.String())
}
