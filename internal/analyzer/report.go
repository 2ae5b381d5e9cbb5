package analyzer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Report takes replica id's load report, received at now, and returns the
// replica's current advisory with ReportInterval set. The effective load
// becomes L = d·L_prev + (1−d)·sample, d being the strategy's dampening (0
// for strategies that are not adaptive); a replica's first report, or its
// first after it went stale, sets L to the sample. After a move touched the
// replica (Bound), the load Bound projected stands until the first report
// that covers an interval entirely after the move, which sets L to its
// sample. The report's client
// rates are kept in load units for planning (see loadRates; taken as they
// are with SetClientRatesInLoad), dampened like the load (see
// smoothRates).
//
// The replica's per-balance load and binding count (strategy.Live) are not
// the analyzer's: package groupcore decides when they are reset (its doc,
// "Per-balance reset").
func (a *Analyzer) Report(id string, rep protocol.Report, now time.Time) (protocol.Advisory, error) {
	r := a.byID[id]
	if r == nil {
		return protocol.Advisory{}, fmt.Errorf("%w %q", ErrUnknownReplica, id)
	}
	sample := rep.Load
	if !(sample >= 0) || math.IsInf(sample, 1) {
		sample = 0
	}
	d := 0.0
	if a.adaptive != nil {
		d = a.adaptive.Dampening()
	}
	restart := !r.reported || now.Sub(r.last) > a.staleAfter()
	switch {
	case restart:
		r.load = sample
		r.rates = nil
	case r.settle > 1:
		// The report covers part of the interval in which a moved client
		// called both replicas: keep the load Bound projected.
	case r.settle == 1:
		// The first report entirely after the move is the new level.
		r.load = sample
	default:
		r.load = d*r.load + (1-d)*sample
	}
	r.reported, r.last, r.sample = true, now, sample
	r.metrics = maps.Clone(rep.Metrics)
	r.clients = slices.Clone(rep.Clients)
	rates := rep.Clients
	if !a.ratesInLoad {
		rates = loadRates(rep, sample)
	}
	r.rates = smoothRates(r.rates, rates, d)
	if now.After(a.now) {
		a.now = now
	}
	if r.settle > 0 {
		r.settle--
	}
	a.changed = true
	return a.advisoryOf(r), nil
}

// loadRates returns the report's clients with their rates converted from
// calls/s into the report's load unit, so that moves can be planned
// whatever the load measures: by load/rps when the report carries the rps
// metric; otherwise the rates are taken as load (true of the monitor's
// default load, the call rate), scaled down proportionally if they add up
// to more than the load (they cannot be in its unit then).
func loadRates(rep protocol.Report, load float64) []protocol.ClientRate {
	if len(rep.Clients) == 0 {
		return nil
	}
	scale := 1.0
	if rps, ok := rep.Metrics[protocol.MetricRPS]; ok && rps > 0 {
		scale = load / rps
	} else {
		sum := 0.0
		for _, c := range rep.Clients {
			sum += c.Rate
		}
		if sum > load {
			scale = load / sum
		}
	}
	out := make([]protocol.ClientRate, len(rep.Clients))
	for i, c := range rep.Clients {
		out[i] = protocol.ClientRate{ID: c.ID, Rate: c.Rate * scale}
	}
	return out
}

func (a *Analyzer) staleAfter() time.Duration { return StaleIntervals * a.interval }

// smoothRates dampens each listed client's rate like the load: r =
// d·r_prev + (1−d)·sample. A client's first report on a replica may cover
// only part of the interval (it was bound, or moved, during it), so the
// second report replaces it and the dampening starts from there. Clients
// the report does not list are dropped.
func smoothRates(prev []clientRate, cur []protocol.ClientRate, d float64) []clientRate {
	if len(cur) == 0 {
		return nil
	}
	old := make(map[string]clientRate, len(prev))
	for _, c := range prev {
		old[c.id] = c
	}
	out := make([]clientRate, 0, len(cur))
	for _, c := range cur {
		p, ok := old[c.ID]
		switch {
		case !ok:
			out = append(out, clientRate{id: c.ID, rate: c.Rate, seen: 1})
		case p.seen == 1:
			out = append(out, clientRate{id: c.ID, rate: c.Rate, seen: 2})
		default:
			out = append(out, clientRate{id: c.ID, rate: d*p.rate + (1-d)*c.Rate, seen: p.seen + 1})
		}
	}
	return out
}
