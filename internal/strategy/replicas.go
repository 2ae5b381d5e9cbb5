package strategy

import (
	"math"
	"slices"
)

// noReplicas is the picker over an empty snapshot: every pick fails with
// ErrNoReplica.
type noReplicas struct{}

func (noReplicas) Pick(*Request) (*Replica, error) { return nil, ErrNoReplica }

// snapshotOf copies the replicas a picker is built over, so that a caller
// reusing its slice cannot change a published picker.
func snapshotOf(replicas []*Replica) []*Replica { return slices.Clone(replicas) }

// weightOf returns r's weight for the weighted strategies. A weight that
// breaks the Replica contract (not finite and > 0) counts as 1, the weight
// a replica registers with by default, rather than silently starving or
// flooding the replica.
func weightOf(r *Replica) float64 {
	w := r.Weight
	if !(w > 0) || math.IsInf(w, 1) {
		return 1
	}
	return w
}

// weightsDiffer reports whether the replicas' weights are not all equal.
func weightsDiffer(replicas []*Replica) bool {
	for _, r := range replicas[1:] {
		if weightOf(r) != weightOf(replicas[0]) {
			return true
		}
	}
	return false
}
