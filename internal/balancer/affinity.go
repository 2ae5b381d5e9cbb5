package balancer

import (
	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Affinity (docs/affinity.md): a group with affinity rules keeps one
// session table (affinity.Table) for its life, rebuilt only when a reload
// changes the rules; each published snapshot carries a Router over the
// members' states in it (Snapshot.Affinity), and the group's loop expires
// idle entries on the balancer's clock.

// affinityTable returns the session table for gs: old when gs's rules
// compile to the same ones (its entries are kept), a new one (with old's
// store) when they changed, nil when gs has no rules or is a group they do
// not apply to.
func affinityTable(old *affinity.Table, gs protocol.Group) *affinity.Table {
	if len(gs.Affinity) == 0 || (gs.Protocol != protocol.ProtocolTCP && !(gs.Protocol == protocol.ProtocolHTTP && gs.Binding == protocol.PerRequest)) {
		return nil
	}
	rules, err := affinity.Compile(gs.Protocol, gs.Affinity)
	if err != nil { // validated before: not reached
		return nil
	}
	if old != nil && old.Rules().Equal(rules) {
		return old
	}
	t := affinity.NewTable(rules)
	if old != nil {
		t.SetStore(old.Store())
	}
	return t
}

// affinityRouterLocked is the Router of the snapshot whose members are
// ms, or nil when the group has no rules. In a cluster, passive ejection
// is this instance's own and moves no key (affinity.Router). Caller holds
// g.mu.
func (g *group) affinityRouterLocked(ms map[string]*frontdoor.Member) frontdoor.Affinity {
	if g.aff == nil {
		return nil
	}
	list := make([]affinity.Member, 0, len(ms))
	for _, m := range g.order {
		if fm := ms[m.rec.ID]; fm != nil {
			list = append(list, affinity.Member{ID: fm.ID(), State: fm.State})
		}
	}
	r := affinity.NewRouter(g.aff, g.name, list, g.b.opts.Leadership != nil, g.b.now)
	if r == nil {
		return nil
	}
	return r
}

// expireAffinityLocked drops the session table's idle entries. Caller
// holds g.mu.
func (g *group) expireAffinityLocked() {
	if g.aff != nil {
		g.aff.Expire(g.b.now())
	}
}
