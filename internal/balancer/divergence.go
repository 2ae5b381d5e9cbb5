package balancer

import (
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/replhub"
)

// diverged handles a replica's divergent reply: a counter, an event on the
// group's stream and, when the hub ejects it, the replica leaves the group
// with its address blocked (RemoveReplicaBlocking), so that it does not
// come back silently: it leaves the live replicas at once (draining), its
// token stops working once its removal ends, and it registers again only
// once an operator lifts the block (DELETE /v1/groups/{name}/blocks,
// fulcrum ctl unblock), then joining by state transfer. With two replicas
// (Ejected false) it is an alert only.
func (g *group) diverged(d replhub.Divergence) {
	g.b.replMetrics.divergent.WithLabelValues(g.name, d.Replica).Inc()
	g.b.goAsync(func() {
		data := map[string]any{"replica": d.Replica, "position": d.Position, "ejected": d.Ejected, "want": d.Want, "got": d.Got}
		g.mu.Lock()
		g.emitLocked("divergence", data)
		g.mu.Unlock()
		if !d.Ejected {
			g.b.log.Warn("replicated group: the two replicas' replies differ; nobody ejected (two replicas have no majority)",
				"group", g.name, "replica", d.Replica, "position", d.Position, "want", d.Want, "got", d.Got)
			return
		}
		g.b.log.Error("replicated group: a replica's reply differs from the majority; it leaves the group and its address is blocked",
			"group", g.name, "replica", d.Replica, "position", d.Position, "want", d.Want, "got", d.Got)
		addr, err := g.b.RemoveReplicaBlocking(g.name, d.Replica)
		if err != nil && !errors.Is(err, ErrUnknownReplica) {
			g.b.log.Error("cannot remove a divergent replica", "group", g.name, "replica", d.Replica, "err", err)
			return
		}
		if err == nil {
			g.b.log.Info("divergent replica removed and its address blocked", "group", g.name, "replica", d.Replica, "address", addr)
		}
	})
}
