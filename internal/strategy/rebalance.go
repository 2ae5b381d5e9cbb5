package strategy

import (
	"math"
	"slices"
)

// rebalance is the analysis the adaptive strategies share. critical tells,
// from a reported replica's effective load per unit of weight and the
// group's weighted mean of those, whether the replica is out of bounds.
// When none is, the group is left alone. Otherwise the move planner
// (PlanMoves) works from every reported replica's effective (dampened)
// load and the smoothed rates of its listed clients, and a plan that
// gains more than half of minImprovement becomes `high` advisories naming
// the clients each source replica sends back; a
// move must gain half of minImprovement (and at least DefaultMoveCost) to
// be worth making. Both are in spread units, the tolerance's; PlanMoves
// ranks by CV and converts them. The trigger is the tolerance band itself,
// so a group inside it is never analysed; once a replica is out of the
// band, a plan has to be clearly better than staying put, not to gain a
// whole band: with a gate as wide as the band, a replica just outside it
// was never brought back (a plan rarely gains a whole band), nor was a
// mix that cannot reach the band brought to its best reachable balance. A critical replica that lists
// no clients cannot be planned for: it gets TAO's advisory, `high` with
// shed = its latest sample above the mean of the samples, and the clients
// it sends back are placed by the picker.
//
// Both the trigger and the plan read the dampened loads and client rates
// (a trend, not a blip, the TAO paper §3.3.4: measured rates are noisy, and a
// plan made on noise is undone by the next one). The unnamed shed reads
// the latest samples: it is sent once and must not chase the lag of the
// dampening. Replicas without a fresh report are neither sources nor
// destinations: their load is unknown.
func rebalance(in *Analysis, critical func(load, mean float64) bool, minImprovement float64) Decision {
	var sumLoad, sumW float64
	for i := range in.Replicas {
		if r := &in.Replicas[i]; r.Reported {
			sumLoad += max(0, r.Load)
			sumW += planWeight(r.Weight)
		}
	}
	if sumW == 0 || sumLoad <= 0 {
		return Decision{}
	}
	mean := sumLoad / sumW
	var crit []int
	for i := range in.Replicas {
		r := &in.Replicas[i]
		if r.Reported && critical(max(0, r.Load)/planWeight(r.Weight), mean) {
			crit = append(crit, i)
		}
	}
	if len(crit) == 0 {
		return Decision{}
	}
	reps := make([]PlanReplica, 0, len(in.Replicas))
	for i := range in.Replicas {
		if r := &in.Replicas[i]; r.Reported {
			reps = append(reps, PlanReplica{ID: r.ID, Weight: r.Weight, Load: r.Load, Clients: r.Clients})
		}
	}
	plan := PlanMoves(reps, PlanOptions{MinImprovement: minImprovement / 2, MoveCost: max(DefaultMoveCost, minImprovement/2)})
	d := advise(plan.Moves)
	sampleMean := 0.0
	for i := range in.Replicas {
		if r := &in.Replicas[i]; r.Reported {
			sampleMean += max(0, r.Sample)
		}
	}
	sampleMean /= sumW
	for _, i := range crit {
		r := &in.Replicas[i]
		if len(r.Clients) > 0 {
			continue
		}
		if shed := max(0, r.Sample) - sampleMean*planWeight(r.Weight); shed > 0 && !math.IsInf(shed, 0) {
			d.High = append(d.High, Advice{ID: r.ID, Shed: shed})
		}
	}
	return d
}

// advise turns planned moves (by source replica) into a decision: a `high`
// advisory for each source naming the clients it sends back.
func advise(moves []Move) Decision {
	d := Decision{Moves: moves}
	for _, mv := range moves {
		if n := len(d.High); n == 0 || d.High[n-1].ID != mv.From {
			d.High = append(d.High, Advice{ID: mv.From})
		}
		a := &d.High[len(d.High)-1]
		a.Shed += mv.Rate
		a.Clients = append(a.Clients, mv.Client)
	}
	return d
}

// refine plans moves that lower the CV of the reported replicas' dampened
// loads by at least minGain: the best set of moves of the listed clients,
// each move costing DefaultMoveCost (converted as PlanMoves does). A
// tentative refinement, for a group rebalance left alone, may also move
// pinned clients, and each of its moves costs refineMoveCost·minGain of
// CV: the analyzer confirms it over several analyses before acting
// (Decision.Tentative), which is what keeps measured noise from moving
// clients back and forth, and the pins would otherwise hold a first,
// hurried plan's clients where rates measured once put them.
func refine(in *Analysis, minGain float64, tentative bool) Decision {
	reps := make([]PlanReplica, 0, len(in.Replicas))
	for i := range in.Replicas {
		if r := &in.Replicas[i]; r.Reported {
			cs := r.Clients
			if tentative && len(r.Pinned) > 0 {
				cs = append(slices.Clone(r.Clients), r.Pinned...)
			}
			reps = append(reps, PlanReplica{ID: r.ID, Weight: r.Weight, Load: r.Load, Clients: cs})
		}
	}
	opt := PlanOptions{MinCVGain: minGain}
	if tentative {
		// In spread units: PlanMoves divides by sqrt(n−1).
		opt.MoveCost = refineMoveCost * minGain * math.Sqrt(float64(max(1, len(reps)-1)))
	}
	d := advise(PlanMoves(reps, opt).Moves)
	d.Tentative = tentative && len(d.Moves) > 0
	return d
}

// refineMoveCost is a tentative refinement's cost of one move, in units of
// its minimum gain: a single move must lower the CV by half as much again
// as min_gain. Lower, measurement noise moved clients in the mixes of
// TestMinimumDispersionMixes long after the group had settled.
const refineMoveCost = 1.5
