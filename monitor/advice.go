package monitor

import (
	"slices"
	"sync"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// advice is an advisory as the hot path applies it. Immutable but for the
// sent set; a new advisory (a new term, epoch or level) is a new advice, so every
// client may be sent back once again.
type advice struct {
	adv protocol.Advisory
	// drain sends every bound client back, on each call.
	drain bool
	// targets are the clients to send back once each (under high).
	targets map[string]struct{}
	// others are the clients the advisory names that this worker does not
	// own (Options.Worker): their calls run, and the first of each is
	// answered with Connection: close (see reconnect). nil for a
	// single-process replica.
	others map[string]struct{}

	mu sync.Mutex
	// sent are the targets already sent back in this advisory (term, epoch). Guarded by mu.
	sent map[string]struct{}
	// closed are the others already answered with Connection: close in
	// this advisory. Guarded by mu.
	closed map[string]struct{}
}

var nominalAdvice = &advice{adv: protocol.Advisory{Advisory: protocol.Nominal}}

// sendBack reports whether a bound call of client should be answered with
// a rebind redirect, and if so marks the client as sent for this epoch.
// Cheap when it answers false for a client not targeted.
func (a *advice) sendBack(client string) bool {
	if a.drain {
		return true
	}
	if len(a.targets) == 0 || client == "" {
		return false
	}
	if _, ok := a.targets[client]; !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, done := a.sent[client]; done {
		return false
	}
	if a.sent == nil {
		a.sent = make(map[string]struct{}, len(a.targets))
	}
	a.sent[client] = struct{}{}
	return true
}

// reconnect reports whether a call of client that runs should be answered
// with Connection: close: the advisory names client but another worker of
// the replica owns it, so that its next call comes on a new connection,
// which the kernel may give to the owner (a client that keeps one
// connection to a worker that does not own it would never be sent back).
// True at most once per client per advisory; the client is then marked.
func (a *advice) reconnect(client string) bool {
	if len(a.others) == 0 || client == "" {
		return false
	}
	if _, ok := a.others[client]; !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, done := a.closed[client]; done {
		return false
	}
	if a.closed == nil {
		a.closed = make(map[string]struct{}, len(a.others))
	}
	a.closed[client] = struct{}{}
	return true
}

// sameAs reports whether adv is the advisory a already applies: same level,
// term and epoch (see sameAdvisory).
func (a *advice) sameAs(adv protocol.Advisory) bool {
	return sameAdvisory(a.adv, adv)
}

// newAdvice builds the advice for adv. rates are the bound clients' rates
// over the last window, busiest first; target converts adv.Shed into calls/s
// (see Monitor.shedTarget); of the clients adv names, only those owns
// accepts are sent back (a worker's own, see Options.Worker).
func newAdvice(adv protocol.Advisory, rates []protocol.ClientRate, target func(shed float64) float64, owns func(client string) bool) *advice {
	a := &advice{adv: adv}
	a.adv.Clients = slices.Clone(adv.Clients)
	switch adv.Advisory {
	case protocol.Drain:
		a.drain = true
	case protocol.High:
		var names []string
		if len(adv.Clients) == 0 {
			names = chooseShed(rates, target(adv.Shed))
		}
		for _, id := range adv.Clients {
			if owns(id) {
				names = append(names, id)
				continue
			}
			if a.others == nil {
				a.others = make(map[string]struct{})
			}
			a.others[id] = struct{}{}
		}
		if len(names) > 0 {
			a.targets = make(map[string]struct{}, len(names))
			for _, id := range names {
				a.targets[id] = struct{}{}
			}
		}
	}
	return a
}

// chosen returns the clients a sends back under high (for logs).
func (a *advice) chosen() []string {
	ids := make([]string, 0, len(a.targets))
	for id := range a.targets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
