package balancer

// leaderEventLocked appends a "leader" event to the balancer's event log
// when the group's analyzer leader as this instance knows it (r.status:
// Leader, LeaderTerm) differs from the one the last such event told: a
// leader elected, another one taking over, or none (between leaders:
// leader "", term 0). Each instance tells what it sees, so that a
// dashboard following any instance follows the leader changes. It runs
// at every step (within one report interval of the change) and at every
// change of this instance's own leadership (LeadershipChanged, at
// once). A group never led yet appends nothing until it has a leader; a
// single node (no Leadership) appends nothing. Caller holds g.mu.
func (g *group) leaderEventLocked(r role) {
	if g.b.opts.Leadership == nil {
		return
	}
	leader, term := r.status.Leader, r.status.LeaderTerm
	if leader == g.shownLeader && term == g.shownTerm {
		return
	}
	g.shownLeader, g.shownTerm = leader, term
	g.emitLocked("leader", map[string]any{"leader": leader, "term": term})
}
