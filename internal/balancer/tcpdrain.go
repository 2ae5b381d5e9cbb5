package balancer

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// drainConnsLocked closes, in a tcp group, the open connections of
// replicas that have been draining (or being removed) for longer than
// tcp.drain_timeout, and those of replicas no longer in the group. New
// connections never go to a draining replica (it is not eligible); the
// open ones may finish on their own until then. g.tcpDrain keeps when each
// replica was first seen draining, at the resolution of the group's
// steps. Caller holds g.mu.
func (g *group) drainConnsLocked(now time.Time) {
	if g.spec.Protocol != protocol.ProtocolTCP {
		return
	}
	if g.tcpDrain == nil {
		g.tcpDrain = map[string]time.Time{}
	}
	timeout := g.spec.TCP.DrainTimeout.D()
	expired := map[string]bool{}
	for _, m := range g.order {
		id := m.rec.ID
		if !m.rec.Draining && !m.rec.Removing {
			delete(g.tcpDrain, id)
			continue
		}
		since, ok := g.tcpDrain[id]
		if !ok {
			g.tcpDrain[id], since = now, now
		}
		if now.Sub(since) >= timeout {
			expired[id] = true
		}
	}
	for id := range g.tcpDrain {
		if g.members[id] == nil {
			delete(g.tcpDrain, id)
		}
	}
	for _, e := range g.conns.Entries() {
		if expired[e.Replica] || g.members[e.Replica] == nil {
			if e.Close() {
				g.b.log.Info("tcp connection closed: its replica's drain timeout passed", "group", g.name, "replica", e.Replica, "client", e.Client)
			}
		}
	}
}
