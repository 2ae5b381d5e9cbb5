package api

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// affinityKinds are the kinds of affinity rules; every kind a group's
// rules use is exported for it (0 for kinds that hold no entries).
var affinityKinds = []string{protocol.AffinitySingleCall, protocol.AffinitySingleton, protocol.AffinityClientActivated}

// sessionMetrics are the figures of the groups' session tables
// (docs/affinity.md), read at each scrape from groups with affinity
// rules. Labels are the group and a rule kind or an outcome: never a key
// or a client.
type sessionMetrics struct {
	b                *balancer.Balancer
	entries, changes *prometheus.Desc
}

func newSessionMetrics(b *balancer.Balancer) *sessionMetrics {
	d := prometheus.NewDesc
	return &sessionMetrics{
		b: b,
		entries: d("fulcrum_group_session_entries", "Entries of the group's session table on this instance, by rule kind (only client-activated rules hold entries).",
			[]string{"group", "kind"}, nil),
		changes: d("fulcrum_group_session_entries_total", "Entries of the group's session table on this instance, by what happened to them: "+
			"created (an object created by a call or connection), expired (idle for the rule's timeout), evicted (pushed out by the rule's max_entries), "+
			"gone (dropped because its replica was lost: the call got 410 or a refused connection).",
			[]string{"group", "event"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *sessionMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.entries
	ch <- m.changes
}

// Collect implements prometheus.Collector.
func (m *sessionMetrics) Collect(ch chan<- prometheus.Metric) {
	for name, st := range m.b.AllSessionStats() {
		kinds := slices.Clone(affinityKinds)
		for k := range st.Entries {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		for _, k := range kinds {
			if n, ok := st.Entries[k]; ok {
				ch <- prometheus.MustNewConstMetric(m.entries, prometheus.GaugeValue, float64(n), name, k)
			}
		}
		for _, c := range []struct {
			event string
			n     uint64
		}{{"created", st.Created}, {"expired", st.Expired}, {"evicted", st.Evicted}, {"gone", st.Gone}} {
			ch <- prometheus.MustNewConstMetric(m.changes, prometheus.CounterValue, float64(c.n), name, c.event)
		}
	}
}
