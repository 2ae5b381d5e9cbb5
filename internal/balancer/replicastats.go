package balancer

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// statsSource is where the status of gs's replicas takes their rates and
// latencies from: the front door where it proxies every call (per-request
// and replicated groups, tcp groups), the replicas' reports where bound
// calls go straight to the replica (on-demand, per-session).
func statsSource(gs protocol.Group) string {
	if registry.AddressProtocol(gs) == protocol.ProtocolTCP {
		return protocol.SourceFrontDoor
	}
	switch gs.Binding {
	case protocol.OnDemand, protocol.PerSession:
		return protocol.SourceReport
	}
	return protocol.SourceFrontDoor
}

// replicaStatsLocked fills rs's workers, source, rps, latency quantiles,
// bound clients and ejections: from m's call window in front-door groups, from
// the view v of its last report (reported: v exists) in the others. A
// figure nothing measured stays nil. Caller holds g.mu.
func (g *group) replicaStatsLocked(rs *protocol.ReplicaStatus, m *member, v analyzer.ReplicaView, reported bool, now time.Time) {
	if g.spec.Health.Passive.ConsecutiveFailures >= 0 {
		n := m.ejections.Load()
		rs.Ejections = &n
	}
	rs.Workers = g.workersStatusLocked(m) // workerreport.go
	rs.Source = statsSource(g.spec)
	if rs.Source == protocol.SourceReport {
		if !reported || !v.Reported {
			return
		}
		rs.RPS = metricOf(v.Metrics, protocol.MetricRPS)
		rs.LatencyP50MS = metricOf(v.Metrics, protocol.MetricLatencyP50MS)
		rs.LatencyP99MS = metricOf(v.Metrics, protocol.MetricLatencyP99MS)
		if b := metricOf(v.Metrics, protocol.MetricBoundClients); b != nil {
			n := int64(*b)
			rs.BoundClients = &n
		}
		return
	}
	st := m.window.Stats(now)
	if st.RPSKnown {
		rs.RPS = &st.RPS
	}
	if st.Answered > 0 && registry.AddressProtocol(g.spec) != protocol.ProtocolTCP {
		// A tcp group's front door sees connections, not calls: the
		// latency it observes is the connect's.
		p50, p99 := ms(st.P50), ms(st.P99)
		rs.LatencyP50MS, rs.LatencyP99MS = &p50, &p99
	}
}

// metricOf is a copy of metrics[key]; nil when absent.
func metricOf(metrics map[string]float64, key string) *float64 {
	x, ok := metrics[key]
	if !ok {
		return nil
	}
	return &x
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
