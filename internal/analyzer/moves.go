package analyzer

// Target returns the replica a planned move sends client to when it comes
// back to the front door.
func (a *Analyzer) Target(client string) (replicaID string, ok bool) {
	mv := a.moves[client]
	if mv == nil {
		return "", false
	}
	return mv.To, true
}

// Bound tells the analyzer the front door bound client to replica id. For
// a client with a planned move this completes the move (wherever the
// client went): its rate leaves the source's effective load and joins the
// destination's at once, both must settle (SettleReports) before the next
// plan, the client is pinned (MovePinIntervals), and a source with no move
// left goes back to nominal. Other
// bindings are ignored: the picker accounts for them with the per-balance
// load.
func (a *Analyzer) Bound(client, id string) {
	mv := a.moves[client]
	if mv == nil {
		return
	}
	delete(a.moves, client)
	a.changed = true
	if id != mv.From {
		if from := a.byID[mv.From]; from != nil && from.reported {
			from.load = max(0, from.load-mv.Rate)
			from.settle = SettleReports
		}
		if to := a.byID[id]; to != nil && to.reported {
			to.load += mv.Rate
			to.settle = SettleReports
		}
		a.pin(client)
	}
	a.releaseSources()
}

// pin keeps client out of the plans for MovePinIntervals, doubled for each
// move within MoveMemoryIntervals of the previous one (at most 64 times).
func (a *Analyzer) pin(client string) {
	h := a.history[client]
	if h == nil || a.now.Sub(h.last) > MoveMemoryIntervals*a.interval {
		h = &moveHistory{}
		a.history[client] = h
	}
	h.moves++
	h.last = a.now
	h.until = a.now.Add(MovePinIntervals * a.interval << min(h.moves-1, 6))
}
