package api

import (
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// refuseReasons are the reasons a tcp group's front door refuses a
// connection (conntable.Refuse*); every one is exported, 0 until it
// happens, so that rates need no absent series. Reasons outside the list
// are exported too, as they come.
var refuseReasons = []string{
	conntable.RefuseMaxConnections, conntable.RefuseReplicaLimit, conntable.RefuseNoReplica,
	conntable.RefuseProxyHeader, conntable.RefuseAffinity, conntable.RefuseDraining,
}

// connMetrics are the figures of tcp groups' connection tables, read at
// each scrape. Labels are group, replica id, a direction and a refusal
// reason: bounded by the groups and their replicas, never a client
// address.
type connMetrics struct {
	groupOpen, groupAccepted, groupBytes, groupRefused *prometheus.Desc
	repOpen, repAccepted, repBytes                     *prometheus.Desc
}

func newConnMetrics() *connMetrics {
	d := prometheus.NewDesc
	g := []string{"group"}
	r := []string{"group", "replica"}
	return &connMetrics{
		groupOpen:     d("fulcrum_group_connections", "Connections the tcp group's front door has open to its replicas.", g, nil),
		groupAccepted: d("fulcrum_group_connections_accepted_total", "Connections the tcp group's front door proxied (connected to a replica).", g, nil),
		groupBytes: d("fulcrum_group_connection_bytes_total", "Bytes the tcp group's front door copied, by direction: in (client to replica), out (replica to client).",
			[]string{"group", "direction"}, nil),
		groupRefused: d("fulcrum_group_connections_refused_total", "Connections the tcp group's front door refused or closed before proxying them, by reason: "+
			"max_connections (tcp.max_connections reached), replica_limit (every candidate at max_inflight), no_replica (nothing could serve, or every connect failed), "+
			"proxy_header (a bad or missing PROXY header from a trusted peer), affinity (the session's replica is gone or unavailable), draining (the front door is shutting down).",
			[]string{"group", "reason"}, nil),
		repOpen:     d("fulcrum_replica_connections", "Connections the tcp group's front door has open to the replica.", r, nil),
		repAccepted: d("fulcrum_replica_connections_accepted_total", "Connections the tcp group's front door proxied to the replica.", r, nil),
		repBytes: d("fulcrum_replica_connection_bytes_total", "Bytes the tcp group's front door copied for the replica's connections, by direction: in (client to replica), out (replica to client).",
			[]string{"group", "replica", "direction"}, nil),
	}
}

func (m *connMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.groupOpen, m.groupAccepted, m.groupBytes, m.groupRefused, m.repOpen, m.repAccepted, m.repBytes} {
		ch <- d
	}
}

// collect sends the connection figures of group gs when it is a tcp
// group.
func (m *connMetrics) collect(ch chan<- prometheus.Metric, b *balancer.Balancer, gs protocol.GroupStatus) {
	if gs.Protocol != protocol.ProtocolTCP {
		return
	}
	st, err := b.ConnectionStats(gs.Name)
	if err != nil {
		return // deleted since the status was read
	}
	m.collectStats(ch, gs.Name, st)
}

// collectStats sends the figures of group name's st.
func (m *connMetrics) collectStats(ch chan<- prometheus.Metric, name string, st balancer.ConnectionStats) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	var sum conntable.ReplicaTotals
	for id, rt := range st.Replicas {
		gauge(m.repOpen, rt.Open, name, id)
		counter(m.repAccepted, rt.Accepted, name, id)
		counter(m.repBytes, rt.BytesIn, name, id, "in")
		counter(m.repBytes, rt.BytesOut, name, id, "out")
		sum.Open += rt.Open
		sum.Accepted += rt.Accepted
		sum.BytesIn += rt.BytesIn
		sum.BytesOut += rt.BytesOut
	}
	gauge(m.groupOpen, sum.Open, name)
	counter(m.groupAccepted, sum.Accepted, name)
	counter(m.groupBytes, sum.BytesIn, name, "in")
	counter(m.groupBytes, sum.BytesOut, name, "out")
	reasons := append([]string(nil), refuseReasons...)
	for r := range st.Refused {
		if !slices.Contains(refuseReasons, r) {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		counter(m.groupRefused, st.Refused[r], name, r)
	}
}
