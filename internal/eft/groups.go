package eft

import (
	"slices"
	"strconv"
	"strings"
)

// groupStateful splits the state groups into phase-1 groups (see Graph):
// the key of a stateful task is the set of its state group's timeout-edge
// heads among its ancestors (itself included); one state group and one
// key make one phase-1 group. Phase-1 groups are numbered in the order
// their first task appears in the scheduling order.
func (g *Graph) groupStateful() {
	n := len(g.ids)
	keys := make([][]int, n)
	for _, h := range g.topo {
		if !g.isTimeoutHead(h) {
			continue
		}
		// Mark the tasks of h's state group reachable from h.
		seen := map[int]bool{h: true}
		stack := []int{h}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if g.state[i] == g.state[h] {
				keys[i] = append(keys[i], h)
			}
			for _, e := range g.succs[i] {
				if !seen[e.task] {
					seen[e.task] = true
					stack = append(stack, e.task)
				}
			}
		}
	}
	g.seg = make([]int, n)
	ids := map[string]int{}
	for _, i := range g.order {
		g.seg[i] = -1
		if g.state[i] == "" {
			continue
		}
		var sb strings.Builder
		sb.WriteString(g.state[i])
		for _, h := range keys[i] {
			sb.WriteByte(0)
			sb.WriteString(strconv.Itoa(h))
		}
		k := sb.String()
		s, ok := ids[k]
		if !ok {
			s = len(g.segTasks)
			ids[k] = s
			g.segTasks = append(g.segTasks, nil)
		}
		g.seg[i] = s
		g.segTasks[s] = append(g.segTasks[s], i)
	}
}

// isTimeoutHead says whether task i has a timeout edge in.
func (g *Graph) isTimeoutHead(i int) bool {
	return slices.ContainsFunc(g.preds[i], func(e edge) bool { return e.timeout > 0 })
}

// Groups are the phase-1 groups: task indexes of each, in scheduling
// order, the groups in the order their first task is scheduled. The caller
// must not modify the slices.
func (g *Graph) Groups() [][]int { return g.segTasks }

// Group is the phase-1 group of task i (an index into Groups), -1 for a
// stateless task.
func (g *Graph) Group(i int) int { return g.seg[i] }
