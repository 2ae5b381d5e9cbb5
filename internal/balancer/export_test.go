package balancer

import (
	"context"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// EligibleIDs returns the ids of the members that group name's current
// snapshot lets take new bindings, in snapshot order; nil for an unknown
// group. Tests use it to see what the front door picks from.
func (b *Balancer) EligibleIDs(name string) []string {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	snap := g.Snapshot()
	ids := make([]string, 0, len(snap.Eligible))
	for _, m := range snap.Eligible {
		ids = append(ids, m.ID())
	}
	return ids
}

// BreakFrontDoor closes group name's listener under its front door, as a
// listener that fails for good, and returns a channel closed once the
// front door's Serve has returned.
func (b *Balancer) BreakFrontDoor(name string) <-chan struct{} {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = g.ln.Close()
	return g.fdExited
}

// Identity is what a reload must leave alone for a group it does not
// touch: the group itself, its strategy, its strategy's probe loop and its
// front door, compared with ==.
type Identity struct {
	Group, Strategy, Probes, FrontDoor any
}

// IdentityOf returns group name's identity; the zero Identity for an
// unknown group.
func (b *Balancer) IdentityOf(name string) Identity {
	g, err := b.group(name)
	if err != nil {
		return Identity{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return Identity{g, g.strat, g.probes, g.fd}
}

// PickLoad is a member's load as group name's current snapshot gives it
// to the picker.
type PickLoad struct {
	Reported bool
	Load     float64
	// Clients is the member's client count the strategy sees.
	Clients int
}

// PickLoads returns the loads group name's current snapshot picks from,
// by replica id; nil for an unknown group.
func (b *Balancer) PickLoads(name string) map[string]PickLoad {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	out := map[string]PickLoad{}
	for id, m := range g.Snapshot().Members {
		out[id] = PickLoad{Reported: m.Replica.Reported, Load: m.Replica.Load, Clients: m.Replica.Clients}
	}
	return out
}

// DeleteReplicaFenced writes the deletion of replica id of group name as
// the leader's write it is when a removal ends (fenced.go), and returns
// the write's error.
func (b *Balancer) DeleteReplicaFenced(name, id string) error {
	g, err := b.group(name)
	if err != nil {
		return err
	}
	g.mu.Lock()
	w := g.queueWriteLocked(&storeWrite{delReplica: id, fenced: true})
	g.mu.Unlock()
	g.flushWrites()
	return w.err
}

// LookupMove looks client's move up as group name's front door does for
// a rebinding client its snapshot does not name.
func (b *Balancer) LookupMove(name, client string) (string, bool) {
	g, err := b.group(name)
	if err != nil {
		return "", false
	}
	snap := g.Snapshot()
	if snap.LookupMove == nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return snap.LookupMove(ctx, client)
}

// PlannedClients are the clients group name's last step planned to move
// (its analyzer's pending moves), sorted; nil for an unknown group.
func (b *Balancer) PlannedClients(name string) []string {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, mv := range g.lastStep.Planned {
		out = append(out, mv.Client)
	}
	slices.Sort(out)
	return out
}

// LivePeers returns what group name's hub is told its live replicas are.
func (b *Balancer) LivePeers(name string) []replhub.Peer {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	return g.livePeers()
}

// Diverged hands group name's divergence handler d, as its hub does.
func (b *Balancer) Diverged(name string, d replhub.Divergence) {
	if g, err := b.group(name); err == nil {
		g.diverged(d)
	}
}

// SnapshotReplicated is the replicated block of group name's current
// snapshot, as its front door reads it.
func (b *Balancer) SnapshotReplicated(name string) protocol.Replicated {
	g, err := b.group(name)
	if err != nil {
		return protocol.Replicated{}
	}
	return g.Snapshot().Replicated
}

// ConnTable is group name's connection table (nil for an unknown group),
// for tests that fill it without a tcp front door.
func (b *Balancer) ConnTable(name string) *conntable.Table {
	g, err := b.group(name)
	if err != nil {
		return nil
	}
	return g.conns
}
