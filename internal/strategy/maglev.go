package strategy

// newMaglevTable fills a Maglev lookup table of m slots (m prime) for the
// replicas ids with weights (Eisenbud et al., NSDI 2016, §3.4,
// Pseudocode 1). Replica i prefers the slots
//
//	(offset_i + j·skip_i) mod m,  j = 0, 1, ...
//
// with offset_i = h1(id) mod m and skip_i = h2(id) mod (m−1) + 1, a
// permutation of all slots because m is prime. Replicas take turns claiming
// their next preferred free slot; to follow the weights, each turn adds
// W_i/W_max to a replica's credit and it claims one slot per whole unit, so
// the heaviest claims one slot every turn. When a replica leaves, the
// others' preference lists are unchanged, so most slots keep their
// replica. With more replicas than slots, the table fills before the last
// ones get a turn.
func newMaglevTable(ids []string, weights []float64, m int) []int32 {
	n := len(ids)
	size := uint64(m)
	offset := make([]uint64, n)
	skip := make([]uint64, n)
	next := make([]uint64, n)
	credit := make([]float64, n)
	var wmax float64
	for i, id := range ids {
		offset[i] = hashString(id, maglevOffsetSeed) % size
		skip[i] = hashString(id, maglevSkipSeed)%(size-1) + 1
		wmax = max(wmax, weights[i])
	}
	table := make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	filled := 0
	for {
		for i := range n {
			credit[i] += weights[i] / wmax
			for credit[i] >= 1 {
				credit[i]--
				c := (offset[i] + next[i]*skip[i]) % size
				for table[c] >= 0 {
					next[i]++
					c = (offset[i] + next[i]*skip[i]) % size
				}
				table[c] = int32(i)
				next[i]++
				if filled++; filled == m {
					return table
				}
			}
		}
	}
}
