package strategy

import (
	"cmp"
	"math"
	"slices"
)

// ringPoint is one point of a hash ring: a hash and the index of the
// replica it belongs to.
type ringPoint struct {
	hash  uint64
	index int32
}

// hashRing is a consistent-hashing ring sorted by hash (Karger et al.,
// "Consistent Hashing and Random Trees", STOC 1997; points per server in
// proportion to its weight as in libketama). A key goes to the first point
// at or after its hash, wrapping around. When a replica leaves, only the
// keys on its own points move.
type hashRing []ringPoint

// newHashRing places round(vnodes·W_i/u) points (at least one) for each
// replica, u the mean weight rounded down to a power of two: a replica of
// mean weight gets between vnodes and 2·vnodes points, and since u rarely
// changes when a replica joins or leaves, neither do the others' points.
// Point k of replica id is at fmix64(h(id) + (k+1)·φ), φ the 64-bit golden
// ratio, so a replica with more points keeps the ones it had.
func newHashRing(ids []string, weights []float64, vnodes int) hashRing {
	var total float64
	for _, w := range weights {
		total += w
	}
	unit := math.Exp2(math.Floor(math.Log2(total / float64(len(weights)))))
	var ring hashRing
	for i, id := range ids {
		count := max(1, int(math.Round(float64(vnodes)*weights[i]/unit)))
		base := hashString(id, ringPointSeed)
		for k := range count {
			ring = append(ring, ringPoint{hash: fmix64(base + uint64(k+1)*0x9e3779b97f4a7c15), index: int32(i)})
		}
	}
	slices.SortFunc(ring, func(a, b ringPoint) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		// Equal hashes (vanishingly rare): order by id, not by position,
		// so that the owner does not depend on the snapshot's order.
		return cmp.Compare(ids[a.index], ids[b.index])
	})
	return ring
}

// lookup returns the index of the replica owning hash h. The ring must not
// be empty.
func (r hashRing) lookup(h uint64) int32 {
	lo, hi := 0, len(r)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r[mid].hash < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r) {
		lo = 0
	}
	return r[lo].index
}
