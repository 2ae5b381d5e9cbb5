package balancer

import (
	"slices"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The leader's advisories and moves at the other instances. In a cluster
// only a group's analyzer leader advises and plans, so only its event log
// would show them; its load push (loadpush.go) carries them too, and an
// instance that takes the view (TakeLoads) appends the leader's step to
// its own event log, with its own id and Event.Instance naming the
// leader, whenever the advisories or the moves differ from the view
// before (every view would double the steps in the stream for nothing).
// Its own steps show the same advisories, moves and loads while it picks
// from the view (stepEventLocked), so that a dashboard following any
// instance sees one picture. The push also carries the moves the leader
// saw completed since the last (at its own front door, or told by a bound
// notice, with the instance where the client bound); each other instance
// appends them as "binding" events marked with that instance, but the
// instance where it happened, whose own event is there already. The
// leader takes no view of its own group, so nothing is relayed twice
// there.

// relayLeaderStepLocked appends the step that view cur brings when its
// advisories or moves differ from prev's (nil: none before). Caller holds
// g.mu.
func (g *group) relayLeaderStepLocked(prev, cur *loadView) {
	if prev != nil && prev.leader == cur.leader && prev.term == cur.term &&
		slices.Equal(prev.moves, cur.moves) && sameAdvice(prev.replicas, cur.replicas) {
		return
	}
	type rep struct {
		ID            string   `json:"id"`
		Load          *float64 `json:"load"`
		EffectiveLoad *float64 `json:"effective_load"`
		Advisory      string   `json:"advisory"`
		Shed          float64  `json:"shed"`
		Epoch         uint64   `json:"epoch"`
	}
	reps := make([]rep, 0, len(cur.replicas))
	for _, l := range cur.replicas {
		r := rep{ID: l.ID, Advisory: advisoryOf(l), Shed: l.Shed, Epoch: l.Epoch}
		if l.Reported {
			s, e := l.Sample, l.Load
			r.Load, r.EffectiveLoad = &s, &e
		}
		reps = append(reps, r)
	}
	g.emitFromLocked(cur.leader, "step", map[string]any{"term": cur.term, "replicas": reps, "moves": cur.plannedMoves()})
}

// sameAdvice reports whether a and b advise every replica alike.
func sameAdvice(a, b []protocol.ReplicaLoad) bool {
	return slices.EqualFunc(a, b, func(x, y protocol.ReplicaLoad) bool {
		return x.ID == y.ID && advisoryOf(x) == advisoryOf(y) && x.Shed == y.Shed && x.Epoch == y.Epoch
	})
}

// advisoryOf is a pushed replica's advisory, nominal when absent.
func advisoryOf(l protocol.ReplicaLoad) string {
	if l.Advisory == "" {
		return protocol.Nominal
	}
	return l.Advisory
}

// load is replica id's entry in the view; ok is false for none (or a nil
// view).
func (v *loadView) load(id string) (l protocol.ReplicaLoad, ok bool) {
	if v == nil {
		return l, false
	}
	l, ok = v.loads[id]
	return l, ok
}

// plannedMoves are the view's moves, never nil (a JSON array).
func (v *loadView) plannedMoves() []protocol.PlannedMove {
	if v.moves == nil {
		return []protocol.PlannedMove{}
	}
	return v.moves
}

// maxCompleted bounds the completed moves kept for the next push; older
// ones are dropped (a push that cannot be made for long).
const maxCompleted = 4096

// completedLocked keeps, while this instance leads the group in a
// cluster, the move of client to replica completed at instance's front
// door ("" unknown) for the next push. Caller holds g.mu.
func (g *group) completedLocked(client, replica, instance string) {
	if !g.leading || g.b.opts.Leadership == nil || g.b.opts.PeerAdminURLs == nil {
		return
	}
	if len(g.completed) >= maxCompleted {
		g.completed = slices.Delete(g.completed, 0, len(g.completed)-maxCompleted+1)
	}
	g.completed = append(g.completed, protocol.CompletedMove{Client: client, Replica: replica, Instance: instance})
}

// relayCompletedLocked appends a "binding" event for each move the view
// v says was completed, marked with the instance where the client bound
// (the leader when v does not say), but those completed here, which this
// instance's own events show already. Caller holds g.mu.
func (g *group) relayCompletedLocked(v protocol.LoadView) {
	for _, m := range v.Completed {
		at := m.Instance
		if at == "" {
			at = v.Leader
		}
		if at == g.b.events.name {
			continue
		}
		g.emitFromLocked(at, "binding", map[string]any{"client": m.Client, "replica": m.Replica, "planned": true, "elsewhere": true})
	}
}
