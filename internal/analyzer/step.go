package analyzer

import (
	"cmp"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Step runs one analysis at now; call it once per report interval. It
// marks stale replicas unreported, expires moves not completed in time
// and, for an adaptive strategy that may plan (no move pending, every
// replica a move touched settled, no hold after an unnamed shed), asks the
// strategy for a decision and turns it into advisories and planned moves.
func (a *Analyzer) Step(now time.Time) Step { return a.StepPlanning(now, true) }

// StepPlanning is Step; with plan false it asks the strategy for nothing
// and withdraws every `high` advisory (Nominal, a new epoch): an instance
// of a cluster that is not the group's warm analyzer leader keeps its
// loads, states and pending moves but advises no shedding of its own
// (package leader). Drain advisories stay. Step is StepPlanning(now, true).
func (a *Analyzer) StepPlanning(now time.Time, plan bool) Step {
	if now.After(a.now) {
		a.now = now
	}
	for c, h := range a.history {
		if now.Sub(h.last) > MoveMemoryIntervals*a.interval {
			delete(a.history, c)
		}
	}
	for _, r := range a.order {
		fresh := r.reported && now.Sub(r.last) <= a.staleAfter()
		if fresh != r.fresh {
			r.fresh = fresh
			a.changed = true
		}
	}
	expiry := MoveExpiryIntervals * a.interval
	for c, mv := range a.moves {
		if now.Sub(mv.planned) > expiry {
			delete(a.moves, c)
			a.changed = true
		}
	}
	a.releaseSources()
	switch {
	case !plan:
		a.withdrawHigh()
	case a.adaptive != nil && a.mayPlan(now):
		a.apply(a.confirm(a.adaptive.Analyze(a.analysis(now))), now)
	}
	st := Step{Now: now, Replicas: make([]ReplicaView, len(a.order)), Changed: a.changed}
	for i, r := range a.order {
		v := ReplicaView{
			ID: r.info.ID, State: r.info.State, Reported: r.fresh,
			Load: r.load, Sample: r.sample, Metrics: r.metrics, Clients: r.clients,
			Advisory: a.advisoryOf(r),
		}
		if r.reported {
			v.EverReported = true
			v.ReportAge = max(0, now.Sub(r.last))
		}
		st.Replicas[i] = v
	}
	st.Moves = a.Moves()
	a.changed = false
	return st
}

// withdrawHigh turns every `high` advisory into a nominal one.
func (a *Analyzer) withdrawHigh() {
	for _, r := range a.order {
		if r.adv.Advisory == protocol.High {
			a.setAdvisory(r, protocol.Nominal, 0, nil)
		}
	}
}

// Moves returns the planned moves not yet completed nor expired, by client.
func (a *Analyzer) Moves() []strategy.Move {
	if len(a.moves) == 0 {
		return nil
	}
	out := make([]strategy.Move, 0, len(a.moves))
	for _, mv := range a.moves {
		out = append(out, mv.Move)
	}
	slices.SortFunc(out, func(x, y strategy.Move) int { return cmp.Compare(x.Client, y.Client) })
	return out
}

// mayPlan reports whether the strategy may be asked for a new plan: no
// move pending, no hold, every fresh active replica settled.
func (a *Analyzer) mayPlan(now time.Time) bool {
	if len(a.moves) > 0 || now.Before(a.holdUntil) {
		return false
	}
	for _, r := range a.order {
		if r.active() && r.fresh && r.settle > 0 {
			return false
		}
	}
	return true
}

// confirm returns d, or no decision for a tentative plan (a refinement)
// until enough analyses have planned one: each analysis with a tentative
// plan counts one up, each without a plan one down (not below 0), and the
// plan of the analysis that reaches ConfirmAnalyses is carried out. A gain
// that measurement noise made up comes and goes; a real one stays. A plan
// that is not tentative is carried out at once and restarts the count.
func (a *Analyzer) confirm(d strategy.Decision) strategy.Decision {
	switch {
	case len(d.Moves) == 0:
		a.confirmed = max(0, a.confirmed-1)
		return d
	case !d.Tentative:
		a.confirmed = 0
		return d
	}
	if a.confirmed++; a.confirmed < ConfirmAnalyses {
		return strategy.Decision{}
	}
	a.confirmed = 0
	return d
}

// analysis is the strategy's input: the active replicas, with the clients
// that may be moved (listed, smoothed, in load units, not pinned) and,
// apart, the pinned ones (for tentative plans only).
func (a *Analyzer) analysis(now time.Time) *strategy.Analysis {
	in := &strategy.Analysis{Now: now, Replicas: make([]strategy.LoadState, 0, len(a.order))}
	for _, r := range a.order {
		if !r.active() {
			continue
		}
		ls := strategy.LoadState{ID: r.info.ID, Weight: r.weight(), Reported: r.fresh, Load: r.load, Sample: r.sample}
		for _, c := range r.rates {
			cr := protocol.ClientRate{ID: c.id, Rate: c.rate}
			if h := a.history[c.id]; h == nil || !now.Before(h.until) {
				ls.Clients = append(ls.Clients, cr)
			} else {
				ls.Pinned = append(ls.Pinned, cr)
			}
		}
		in.Replicas = append(in.Replicas, ls)
	}
	return in
}

// apply turns a decision into advisories and pending moves. Advice and
// moves naming replicas that are not active and fresh are ignored. With
// unidentified clients, moves out of a replica the decision also moves
// clients into wait for a later plan (SetUnidentifiedClients).
func (a *Analyzer) apply(d strategy.Decision, now time.Time) {
	usable := func(id string) bool {
		r := a.byID[id]
		return r != nil && r.active() && r.fresh
	}
	if a.unidentified {
		d = a.deferReceiversMoves(d)
	}
	for _, mv := range d.Moves {
		if mv.Client == "" || mv.From == mv.To || !usable(mv.From) || !usable(mv.To) || a.moves[mv.Client] != nil {
			continue
		}
		a.moves[mv.Client] = &pendingMove{Move: mv, planned: now}
		a.changed = true
	}
	high := make(map[string]strategy.Advice, len(d.High))
	for _, adv := range d.High {
		if usable(adv.ID) && adv.Shed > 0 {
			high[adv.ID] = adv
		}
	}
	for _, r := range a.order {
		if !r.active() {
			continue
		}
		adv, ok := high[r.info.ID]
		if !ok {
			a.setAdvisory(r, protocol.Nominal, 0, nil)
			continue
		}
		a.setAdvisory(r, protocol.High, adv.Shed, slices.Clone(adv.Clients))
		if len(adv.Clients) == 0 {
			a.holdUntil = now.Add(ShedHoldIntervals * a.interval)
		}
	}
	a.releaseSources()
}
