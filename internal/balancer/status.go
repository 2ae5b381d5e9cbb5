package balancer

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Event is one entry of a group's event stream.
type Event struct {
	// ID is "<instance>-<seq>": this instance's name (Options.Instance)
	// and the event's place in its balancer-wide sequence (eventlog.go),
	// increasing across all groups; "" for events outside it.
	ID string `json:"id,omitempty"`
	// Seq is the seq of ID (0 for events outside the sequence).
	Seq uint64 `json:"-"`
	// Instance is the instance the event happened at when that is not
	// this one: a group's analyzer leader, whose advisories and planned
	// moves its load push brings (TakeLoads), or the instance at whose
	// front door a planned move completed. "" for this instance's own.
	Instance string `json:"instance,omitempty"`
	// Type is "step" (an analyzer step: loads, advisories, moves),
	// "binding" (a planned move completed), "membership" (a replica
	// joined, left or changed state), "config" (settings changed),
	// "alert" (the strategy raised an alert; probe.go), "divergence",
	// "leader" (the group's leader as this instance knows it changed, in a
	// cluster; leaderevent.go), or "group-created" / "group-deleted" (on GET /v1/events only).
	Type  string    `json:"type"`
	Group string    `json:"group"`
	Time  time.Time `json:"time"`
	Data  any       `json:"data"`
}

// status renders the group's status.
func (g *group) status() protocol.GroupStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.b.now()
	st := protocol.GroupStatus{Group: g.spec, Replicas: []protocol.ReplicaStatus{}, StrategyAlerts: g.alerts.Load(), Revision: g.rev}
	st.Advertise = g.advertiseLocked()
	st.Reference = g.referenceLocked()
	st.Blocked = g.blockedAddressesLocked()
	if g.queueLocked() != nil {
		qs := g.queue.Stats()
		st.QueueStats = &qs
	}
	if g.ln != nil {
		st.Listening = g.ln.Addr().String()
	}
	views := map[string]analyzer.ReplicaView{}
	for _, v := range g.lastStep.Replicas {
		views[v.ID] = v
	}
	viewNow := g.lastStep.Now
	if pushed := g.pushedViewLocked(); pushed != nil {
		// Not the leader: the loads are the leader's (loadview.go).
		views, viewNow = pushed.replicaViews(), pushed.received
	}
	hub := g.hubLocked()
	for _, m := range g.order {
		rs := protocol.ReplicaStatus{
			ID: m.rec.ID, Address: m.rec.Address, State: g.stateLocked(m), Weight: m.rec.Weight, Static: m.rec.Static,
			Monitor:  monitorMode(m.rec.Monitor),
			Inflight: m.live.Inflight.Load(),
			Counters: protocol.CountersStatus{
				Bindings: m.counters.Bindings.Load(), Rebinds: m.counters.Rebinds.Load(), Proxied: m.counters.Proxied.Load(),
				Redirected: m.counters.Redirected.Load(), Failures: m.counters.Failures.Load(),
			},
		}
		adv := g.core.Advisory(m.rec.ID)
		rs.Advisory, rs.Shed, rs.Epoch = adv.Advisory, adv.Shed, adv.Epoch
		v, ok := views[m.rec.ID]
		if ok && v.Reported {
			load, eff := v.Sample, v.Load
			rs.Load, rs.EffectiveLoad = &load, &eff
			rs.Metrics = v.Metrics
		}
		if ok && v.EverReported {
			// Kept once the report is stale: a replica that stopped
			// reporting shows how long ago it last did.
			age := (v.ReportAge + now.Sub(viewNow)).Milliseconds()
			if age < 0 {
				age = 0
			}
			rs.ReportAgeMS = &age
		}
		g.replicaStatsLocked(&rs, m, v, ok, now)
		if hub != nil {
			rs.Applied = hub.AppliedBy(m.rec.ID)
		}
		st.Replicas = append(st.Replicas, rs)
	}
	return st
}

func monitorMode(m protocol.MonitorSpec) string {
	if m.Mode == "" {
		return protocol.MonitorPush
	}
	return m.Mode
}
