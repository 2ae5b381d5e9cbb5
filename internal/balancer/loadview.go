package balancer

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Load views. In a cluster only a group's leader takes its reports; it
// pushes its view of the loads to the other instances (loadpush.go), and
// an instance that does not lead the group builds its front door's
// snapshots from the last view pushed to it, combined with its own calls
// in flight (strategy.Live), rather than from its own analyzer, which
// hears no reports. A view whose term is below the highest this instance
// has seen for the group is ignored (a deposed leader's); a view older
// than analyzer.StaleIntervals report intervals is not used (its loads
// count as unreported), and neither is any view while this instance leads
// the group.

// loadView is a view pushed here, as received.
type loadView struct {
	term     uint64
	leader   string
	received time.Time
	loads    map[string]protocol.ReplicaLoad
	// replicas are the view's replicas in the leader's order, and moves
	// its planned moves (leaderevents.go).
	replicas []protocol.ReplicaLoad
	moves    []protocol.PlannedMove
}

// TakeLoads applies a leader's load view of its group (POST
// /v1/cluster/loads). A view that does not validate is a
// *protocol.FieldError; an unknown group wraps ErrUnknownGroup. A view
// this instance does not use is answered with Applied false and why.
func (b *Balancer) TakeLoads(v protocol.LoadView) (protocol.LoadsAnswer, error) {
	if err := v.Validate(); err != nil {
		return protocol.LoadsAnswer{}, err
	}
	g, err := b.group(v.Group)
	if err != nil {
		return protocol.LoadsAnswer{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading {
		return protocol.LoadsAnswer{Reason: fmt.Sprintf("instance leads group %s: it picks from its own view", g.name)}, nil
	}
	highest := g.viewTerm
	if st := g.roleLocked().status; st.LeaderTerm > 0 && uint64(st.LeaderTerm) > highest {
		highest = uint64(st.LeaderTerm)
	}
	if v.Term < highest {
		return protocol.LoadsAnswer{Reason: fmt.Sprintf("term %d is below %d, the highest seen for group %s", v.Term, highest, g.name)}, nil
	}
	g.viewTerm = v.Term
	lv := &loadView{term: v.Term, leader: v.Leader, received: g.b.now(), loads: make(map[string]protocol.ReplicaLoad, len(v.Replicas)),
		replicas: v.Replicas, moves: v.Moves}
	for _, r := range v.Replicas {
		lv.loads[r.ID] = r
	}
	g.relayCompletedLocked(v)           // leaderevents.go
	g.relayLeaderStepLocked(g.view, lv) // leaderevents.go
	g.view = lv
	g.publishLocked()
	return protocol.LoadsAnswer{Applied: true}, nil
}

// pushedViewLocked is the view the snapshot is built from instead of the
// analyzer's, or nil: the group is led here, no view came, or the last
// is stale. Caller holds g.mu.
func (g *group) pushedViewLocked() *loadView {
	if g.leading || g.view == nil {
		return nil
	}
	if g.b.now().Sub(g.view.received) > analyzer.StaleIntervals*g.spec.ReportInterval.D() {
		return nil
	}
	return g.view
}

// applyPushedLoad sets rep's load from a pushed view's entry.
func applyPushedLoad(rep *strategy.Replica, e protocol.ReplicaLoad) {
	rep.Reported = e.Reported
	if !e.Reported {
		return
	}
	rep.Load = e.Load
	rep.Metrics = metricsOf(e.Metrics)
	rep.Clients = e.Clients
}

// replicaViews are the view's loads in the shape of the analyzer's views
// (for the status), as of the view's arrival.
func (v *loadView) replicaViews() map[string]analyzer.ReplicaView {
	out := make(map[string]analyzer.ReplicaView, len(v.loads))
	for id, l := range v.loads {
		rv := analyzer.ReplicaView{ID: id, Reported: l.Reported}
		if l.Reported {
			rv.Load, rv.Sample, rv.Metrics = l.Load, l.Sample, l.Metrics
		}
		if l.ReportAgeMS != nil {
			rv.EverReported = true
			rv.ReportAge = time.Duration(*l.ReportAgeMS) * time.Millisecond
		}
		out[id] = rv
	}
	return out
}
