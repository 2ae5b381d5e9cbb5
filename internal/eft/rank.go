package eft

import "slices"

// rank computes the upward ranks (eq. 2) and the scheduling order.
func (g *Graph) rank() {
	n := len(g.ids)
	g.ranks = make([]float64, n)
	for j := n - 1; j >= 0; j-- {
		i := g.topo[j]
		best := 0.0
		for _, e := range g.succs[i] {
			best = max(best, e.cost+g.ranks[e.task])
		}
		g.ranks[i] = g.cost[i] + best
	}
	pos := make([]int, n)
	for p, i := range g.topo {
		pos[i] = p
	}
	g.order = slices.Clone(g.topo)
	// Decreasing rank; equal ranks (a zero-cost task over a zero-cost
	// edge) keep the topological order, so predecessors always come first.
	slices.SortStableFunc(g.order, func(a, b int) int {
		switch {
		case g.ranks[a] > g.ranks[b]:
			return -1
		case g.ranks[a] < g.ranks[b]:
			return 1
		}
		return pos[a] - pos[b]
	})
}

// Ranks are the tasks' upward ranks (eq. 2), by task index:
// rank(n_i) = w_i + max over successors n_j of (c(i,j) + rank(n_j)), w_i
// for an exit task. The caller must not modify the slice.
func (g *Graph) Ranks() []float64 { return g.ranks }

// Order is the scheduling order of phase 2: task indexes by decreasing
// rank, ties in a topological order, so that every task comes after its
// predecessors. The caller must not modify the slice.
func (g *Graph) Order() []int { return g.order }
