package groupcore

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Step is the result of one Step.
type Step struct {
	// Step is the analyzer's step; its replicas' advisories are as the
	// binding mode allows them (Core.Advisory). Replicas removed by this
	// step are still in it.
	analyzer.Step
	// Planned are the moves the front door carries out when the client
	// comes back: Moves in on-demand groups and with Settings.MoveClients
	// (a client address's next connection), none in others.
	Planned []strategy.Move
	// Reset are the replicas whose per-balance load and binding count
	// (strategy.Live's Extra and Bindings) the caller clears before it
	// publishes this step (see the package doc).
	Reset []string
	// Removed are the replicas whose removal finished: the core has
	// forgotten them; the caller drops them and their records.
	Removed []string
}

// Step runs one step at now (analyzer.Step), then finishes removals.
// inflight tells how many calls the caller has in flight to a replica. A
// removed replica leaves once idle (its last report, if fresh, shows no
// calls per second and none in flight, and inflight says none) or once it
// has drained for DrainTimeout.
func (c *Core) Step(now time.Time, inflight func(id string) int64) Step {
	return c.StepAs(now, inflight, Lead{Plan: true, Remove: true})
}

// Lead is what a step of an instance of a cluster may decide (package
// leader): only the group's analyzer leader plans, once warm, and
// finishes removals, once in office long enough to have heard from the
// replicas. A single node may do both.
type Lead struct {
	// Plan: ask the strategy for a plan. Without, no plan is made and
	// `high` advisories are withdrawn (analyzer.StepPlanning).
	Plan bool
	// Remove: finish the removals of replicas that are idle or have
	// drained for DrainTimeout. Without, removed replicas stay until the
	// leader's removal of their records reaches this instance.
	Remove bool
}

// StepAs is Step for an instance of a cluster, deciding what lead allows;
// it always marks stale replicas, expires moves and resets the
// per-balance loads. Step is StepAs with both allowed.
func (c *Core) StepAs(now time.Time, inflight func(id string) int64, lead Lead) Step {
	st := Step{Step: c.an.StepPlanning(now, lead.Plan)}
	for i := range st.Replicas {
		st.Replicas[i].Advisory = c.forBinding(st.Replicas[i].Advisory)
	}
	if c.settings.Binding == OnDemand || c.settings.MoveClients {
		st.Planned = st.Moves
	}
	for _, m := range c.order {
		if m.reported {
			m.reported = false
			st.Reset = append(st.Reset, m.id)
		}
	}
	views := make(map[string]*analyzer.ReplicaView, len(st.Replicas))
	for i := range st.Replicas {
		views[st.Replicas[i].ID] = &st.Replicas[i]
	}
	timeout := c.DrainTimeout()
	for _, m := range c.order {
		if !lead.Remove || !m.life.Removing() {
			continue
		}
		idle := true
		if v := views[m.id]; v != nil && v.Reported {
			idle = v.Metrics[protocol.MetricRPS] == 0 && v.Metrics[protocol.MetricInflight] == 0
		}
		idle = idle && inflight(m.id) == 0
		if idle || now.Sub(m.life.since) > timeout {
			st.Removed = append(st.Removed, m.id)
		}
	}
	for _, id := range st.Removed {
		c.Forget(id)
	}
	return st
}
