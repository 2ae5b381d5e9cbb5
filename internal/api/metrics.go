package api

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// metrics serves the Prometheus text format.
func (s *server) metrics(w http.ResponseWriter, r *http.Request) { s.prom.ServeHTTP(w, r) }

// newMetricsHandler serves GET /metrics from a private registry: the
// balancer's figures, read at scrape time, and the Go and process
// collectors, and extra (Options.Collectors).
func newMetricsHandler(b *balancer.Balancer, version string, extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newCollector(b, version),
		b.CertificateMetrics(),
		b.PeerMetrics(),
		b.ReplicatedMetrics(),
		newSessionMetrics(b), // sessionmetrics.go
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(extra...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

var (
	replicaStates  = []string{protocol.StateActive, protocol.StateDraining, protocol.StateEjected, protocol.StateDown}
	advisoryLevels = []string{protocol.Nominal, protocol.High, protocol.Drain}
)

// collector turns the balancer's status into metrics at every scrape, so
// that the figures are exactly those of GET /v1/groups/{name}.
type collector struct {
	b       *balancer.Balancer
	version string

	buildInfo, ready *prometheus.Desc

	groupInfo, groupReplicas, groupAdvisories, groupReported                  *prometheus.Desc
	groupLoad, groupEffective, groupShed, groupInflight, groupMaxAge          *prometheus.Desc
	groupBindings, groupRebinds, groupProxied, groupRedirected, groupFailures *prometheus.Desc
	groupAlerts, groupQueueWaiting, groupQueueCalls, groupQueueEarly          *prometheus.Desc
	groupQueueWait                                                            *prometheus.Desc

	repInfo, repState, repWeight, repReported, repLoad, repEffective, repAge *prometheus.Desc
	repAdvisory, repEpoch, repShed, repInflight                              *prometheus.Desc
	repBindings, repRebinds, repProxied, repRedirected, repFailures          *prometheus.Desc

	// conns are tcp groups' connection table figures (connmetrics.go).
	conns *connMetrics
}

func newCollector(b *balancer.Balancer, version string) *collector {
	g := []string{"group"}
	r := []string{"group", "replica"}
	d := prometheus.NewDesc
	return &collector{
		b: b, version: version, conns: newConnMetrics(),
		buildInfo: d("fulcrum_build_info", "fulcrum's version; always 1.", []string{"version"}, nil),
		ready:     d("fulcrum_ready", "1 when every group's front door is serving and the store answers (as /readyz).", nil, nil),

		groupInfo:         d("fulcrum_group_info", "A group's settings; always 1.", []string{"group", "protocol", "binding", "strategy", "source"}, nil),
		groupReplicas:     d("fulcrum_group_replicas", "Replicas of the group in each state.", []string{"group", "state"}, nil),
		groupAdvisories:   d("fulcrum_group_advisories", "Replicas of the group holding each advisory level.", []string{"group", "advisory"}, nil),
		groupReported:     d("fulcrum_group_reported_replicas", "Replicas of the group with a fresh load report.", g, nil),
		groupLoad:         d("fulcrum_group_load", "Sum of the last reported loads of the group's reported replicas.", g, nil),
		groupEffective:    d("fulcrum_group_effective_load", "Sum of the effective (dampened) loads of the group's reported replicas.", g, nil),
		groupShed:         d("fulcrum_group_shed", "Sum of the load the group's replicas are advised to shed.", g, nil),
		groupInflight:     d("fulcrum_group_inflight", "Calls the front door has in flight to the group's replicas.", g, nil),
		groupMaxAge:       d("fulcrum_group_report_age_max_seconds", "Age of the oldest last report among the group's reported replicas.", g, nil),
		groupBindings:     d("fulcrum_group_bindings_total", "Clients bound by the front door, summed over the group's current replicas.", g, nil),
		groupRebinds:      d("fulcrum_group_rebinds_total", "Bindings that moved a client, summed over the group's current replicas.", g, nil),
		groupProxied:      d("fulcrum_group_proxied_total", "Calls proxied by the front door, summed over the group's current replicas.", g, nil),
		groupRedirected:   d("fulcrum_group_redirected_total", "Front door redirects, summed over the group's current replicas.", g, nil),
		groupFailures:     d("fulcrum_group_failures_total", "Failed calls, summed over the group's current replicas.", g, nil),
		groupAlerts:       d("fulcrum_group_strategy_alerts_total", "Alerts the group's strategy raised (albl: no replica up for three periods).", g, nil),
		groupQueueWaiting: d("fulcrum_group_queue_waiting", "Calls waiting in the group's front door queue (groups with a queue).", g, nil),
		groupQueueCalls: d("fulcrum_group_queue_calls_total", "Calls that met the group's full replicas and a queue, by outcome: served (got a replica after waiting), full (refused: the queue held its limit), timed_out (waited out queue.timeout or lost their client).",
			[]string{"group", "outcome"}, nil),
		groupQueueEarly: d("fulcrum_group_queue_early_slots_total", "max_inflight slots freed ahead of their call's expected end (queue.lead).", g, nil),
		groupQueueWait:  d("fulcrum_group_queue_wait_seconds", "How long the calls served from the group's front door queue waited in it.", g, nil),

		repInfo:       d("fulcrum_replica_info", "A replica's address and monitor mode; always 1.", []string{"group", "replica", "address", "monitor", "static"}, nil),
		repState:      d("fulcrum_replica_state", "1 for the replica's current state, 0 for the others.", []string{"group", "replica", "state"}, nil),
		repWeight:     d("fulcrum_replica_weight", "The replica's relative capacity.", r, nil),
		repReported:   d("fulcrum_replica_reported", "1 when the replica has a fresh load report, 0 when its load is unknown.", r, nil),
		repLoad:       d("fulcrum_replica_load", "The replica's last reported load (absent when unreported).", r, nil),
		repEffective:  d("fulcrum_replica_effective_load", "The analyzer's effective (dampened) load of the replica (absent when unreported).", r, nil),
		repAge:        d("fulcrum_replica_report_age_seconds", "Age of the replica's last load report, kept once it is stale (absent when never reported).", r, nil),
		repAdvisory:   d("fulcrum_replica_advisory", "1 for the replica's current advisory level, 0 for the others.", []string{"group", "replica", "advisory"}, nil),
		repEpoch:      d("fulcrum_replica_advisory_epoch", "Epoch of the replica's current advisory.", r, nil),
		repShed:       d("fulcrum_replica_shed", "Load the replica is advised to shed.", r, nil),
		repInflight:   d("fulcrum_replica_inflight", "Calls the front door has in flight to the replica.", r, nil),
		repBindings:   d("fulcrum_replica_bindings_total", "Clients the front door bound to the replica.", r, nil),
		repRebinds:    d("fulcrum_replica_rebinds_total", "Bindings that moved a client to the replica.", r, nil),
		repProxied:    d("fulcrum_replica_proxied_total", "Calls the front door proxied to the replica.", r, nil),
		repRedirected: d("fulcrum_replica_redirected_total", "Front door redirects to the replica.", r, nil),
		repFailures:   d("fulcrum_replica_failures_total", "Failed calls to the replica.", r, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.buildInfo, c.ready,
		c.groupInfo, c.groupReplicas, c.groupAdvisories, c.groupReported,
		c.groupLoad, c.groupEffective, c.groupShed, c.groupInflight, c.groupMaxAge,
		c.groupBindings, c.groupRebinds, c.groupProxied, c.groupRedirected, c.groupFailures,
		c.groupAlerts, c.groupQueueWaiting, c.groupQueueCalls, c.groupQueueEarly, c.groupQueueWait,
		c.repInfo, c.repState, c.repWeight, c.repReported, c.repLoad, c.repEffective, c.repAge,
		c.repAdvisory, c.repEpoch, c.repShed, c.repInflight,
		c.repBindings, c.repRebinds, c.repProxied, c.repRedirected, c.repFailures,
	} {
		ch <- d
	}
	c.conns.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.buildInfo, 1, c.version)
	gauge(c.ready, boolValue(c.b.Ready() && c.b.StoreUnreachable() == nil))

	for _, gs := range c.b.Groups() {
		name := gs.Name
		gauge(c.groupInfo, 1, name, gs.Protocol, gs.Binding, gs.Strategy, gs.Source)
		states := map[string]int{}
		levels := map[string]int{}
		var (
			reported                      int
			load, effective, shed, maxAge float64
			inflight                      int64
			sum                           protocol.CountersStatus
		)
		for _, rs := range gs.Replicas {
			labels := []string{name, rs.ID}
			states[rs.State]++
			levels[rs.Advisory]++
			gauge(c.repInfo, 1, name, rs.ID, rs.Address, rs.Monitor, strconv.FormatBool(rs.Static))
			for _, st := range replicaStates {
				gauge(c.repState, boolValue(rs.State == st), name, rs.ID, st)
			}
			gauge(c.repWeight, rs.Weight, labels...)
			gauge(c.repReported, boolValue(rs.Load != nil), labels...)
			if rs.Load != nil {
				reported++
				load += *rs.Load
				gauge(c.repLoad, *rs.Load, labels...)
			}
			if rs.EffectiveLoad != nil {
				effective += *rs.EffectiveLoad
				gauge(c.repEffective, *rs.EffectiveLoad, labels...)
			}
			if rs.ReportAgeMS != nil {
				age := float64(*rs.ReportAgeMS) / 1000
				if rs.Load != nil {
					maxAge = max(maxAge, age) // the oldest fresh report
				}
				gauge(c.repAge, age, labels...)
			}
			for _, lv := range advisoryLevels {
				gauge(c.repAdvisory, boolValue(rs.Advisory == lv), name, rs.ID, lv)
			}
			gauge(c.repEpoch, float64(rs.Epoch), labels...)
			gauge(c.repShed, rs.Shed, labels...)
			shed += rs.Shed
			gauge(c.repInflight, float64(rs.Inflight), labels...)
			inflight += rs.Inflight
			counter(c.repBindings, rs.Counters.Bindings, labels...)
			counter(c.repRebinds, rs.Counters.Rebinds, labels...)
			counter(c.repProxied, rs.Counters.Proxied, labels...)
			counter(c.repRedirected, rs.Counters.Redirected, labels...)
			counter(c.repFailures, rs.Counters.Failures, labels...)
			sum.Bindings += rs.Counters.Bindings
			sum.Rebinds += rs.Counters.Rebinds
			sum.Proxied += rs.Counters.Proxied
			sum.Redirected += rs.Counters.Redirected
			sum.Failures += rs.Counters.Failures
		}
		for _, st := range replicaStates {
			gauge(c.groupReplicas, float64(states[st]), name, st)
		}
		for _, lv := range advisoryLevels {
			gauge(c.groupAdvisories, float64(levels[lv]), name, lv)
		}
		gauge(c.groupReported, float64(reported), name)
		gauge(c.groupLoad, load, name)
		gauge(c.groupEffective, effective, name)
		gauge(c.groupShed, shed, name)
		gauge(c.groupInflight, float64(inflight), name)
		if reported > 0 {
			gauge(c.groupMaxAge, maxAge, name)
		}
		counter(c.groupBindings, sum.Bindings, name)
		counter(c.groupRebinds, sum.Rebinds, name)
		counter(c.groupProxied, sum.Proxied, name)
		counter(c.groupRedirected, sum.Redirected, name)
		counter(c.groupFailures, sum.Failures, name)
		counter(c.groupAlerts, gs.StrategyAlerts, name)
		if q := gs.QueueStats; q != nil {
			gauge(c.groupQueueWaiting, float64(q.Waiting), name)
			counter(c.groupQueueCalls, q.Served, name, "served")
			counter(c.groupQueueCalls, q.Full, name, "full")
			counter(c.groupQueueCalls, q.TimedOut, name, "timed_out")
			counter(c.groupQueueEarly, q.Early, name)
			ch <- queueWaitHistogram(c.groupQueueWait, *q, name)
		}
		c.conns.collect(ch, c.b, gs)
	}
}

// queueWaitHistogram is q's wait histogram: cumulative counts at
// frontdoor.QueueWaitBounds, the served calls as its count.
func queueWaitHistogram(d *prometheus.Desc, q protocol.QueueStats, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(frontdoor.QueueWaitBounds))
	var cum uint64
	for i, b := range frontdoor.QueueWaitBounds {
		if i < len(q.WaitCounts) {
			cum += q.WaitCounts[i]
		}
		buckets[b.Seconds()] = cum
	}
	var total uint64
	for _, n := range q.WaitCounts {
		total += n
	}
	return prometheus.MustNewConstHistogram(d, total, q.WaitSeconds, buckets, labels...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
