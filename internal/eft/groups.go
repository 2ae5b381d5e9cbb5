package eft

import (
	"encoding/binary"
	"slices"
)

// groupStateful splits the state groups into phase-1 groups (see Graph):
// the key of a stateful task is the set of its state group's timeout-edge
// heads among its ancestors (itself included); one state group and one
// key make one phase-1 group. Phase-1 groups are numbered in the order
// their first task appears in the scheduling order.
//
// The sets are bitsets over the heads, ORed along the topological order:
// O(edges × heads / 64) time and tasks × heads bits of memory (10,000
// tasks, 5,000 heads: 6 MB).
func (g *Graph) groupStateful() {
	n := len(g.ids)
	headBit := map[int]int{}
	for _, i := range g.topo {
		if g.isTimeoutHead(i) {
			headBit[i] = len(headBit)
		}
	}
	words := (len(headBit) + 63) / 64
	var bits [][]uint64
	masks := map[string][]uint64{} // state group → its heads' bits
	if words > 0 {
		bits = make([][]uint64, n)
		store := make([]uint64, n*words)
		for _, i := range g.topo {
			b := store[:words:words]
			store = store[words:]
			for _, e := range g.preds[i] {
				for w, v := range bits[e.task] {
					b[w] |= v
				}
			}
			if h, ok := headBit[i]; ok {
				b[h/64] |= 1 << (h % 64)
				m := masks[g.state[i]]
				if m == nil {
					m = make([]uint64, words)
					masks[g.state[i]] = m
				}
				m[h/64] |= 1 << (h % 64)
			}
			bits[i] = b
		}
	}
	g.seg = make([]int, n)
	ids := map[string]int{}
	key := make([]byte, 0, 64)
	for _, i := range g.order {
		g.seg[i] = -1
		if g.state[i] == "" {
			continue
		}
		key = binary.AppendUvarint(key[:0], uint64(len(g.state[i])))
		key = append(key, g.state[i]...)
		if m := masks[g.state[i]]; m != nil {
			for w, v := range bits[i] {
				key = binary.LittleEndian.AppendUint64(key, v&m[w])
			}
		}
		s, ok := ids[string(key)]
		if !ok {
			s = len(g.segTasks)
			ids[string(key)] = s
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
