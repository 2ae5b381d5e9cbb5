package balancer

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
