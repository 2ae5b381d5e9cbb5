package eft

// phase1 places phase-1 groups (eq. 3–4): each group in turn, in the order
// given, to the server minimising AddLoad(s, g) = Load(s) + Σ R_k over the
// group's tasks, where Load(s) starts at load[s] and grows by each group
// placed on s. Ties go to the lowest server index. It returns the server
// of each group of groups and leaves load updated.
func phase1(groups []int, remaining func(group int) float64, load []float64) []int {
	out := make([]int, len(groups))
	for gi, grp := range groups {
		r := remaining(grp)
		best := 0
		for s := range load {
			if load[s]+r < load[best]+r {
				best = s
			}
		}
		load[best] += r
		out[gi] = best
	}
	return out
}
