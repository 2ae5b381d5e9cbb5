package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// MaxSessionsPage bounds a page of a group's session table.
const MaxSessionsPage = 10_000

// sessionTable is group g's session table (affinity.go); nil when the
// group has no affinity rules.
func (g *group) sessionTable() *affinity.Table {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.aff
}

// Sessions returns a page of group name's session table (its
// client-activated entries on this instance): at most limit (clamped to
// [1, MaxSessionsPage]) entries after the token after ("<rule>/<key>",
// "" from the start), ordered by rule then key. A group without affinity
// rules has an empty table. Errors: ErrUnknownGroup.
func (b *Balancer) Sessions(name, after string, limit int) (protocol.SessionList, error) {
	g, err := b.group(name)
	if err != nil {
		return protocol.SessionList{}, err
	}
	t := g.sessionTable()
	if t == nil {
		return protocol.SessionList{Sessions: []protocol.SessionEntry{}}, nil
	}
	return t.List(after, min(max(limit, 1), MaxSessionsPage), b.now()), nil
}

// AllSessionStats returns the session table counters of every group with
// affinity rules, by group name (for metrics).
func (b *Balancer) AllSessionStats() map[string]affinity.Stats {
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	out := map[string]affinity.Stats{}
	for _, g := range groups {
		if t := g.sessionTable(); t != nil {
			out[g.name] = t.Stats()
		}
	}
	return out
}
