package eft

import (
	"math"
	"slices"
)

// interval is a task planned on a server, [start, end) in ms.
type interval struct{ start, end float64 }

// profile is what phase 2 has planned on one server: the intervals of the
// tasks placed there so far. Planned intervals are kept as they were
// planned (a later task sharing the server does not stretch them), as in
// the paper's worked example, where n3 on s1 takes 7 × 2 because n2 runs
// there.
type profile []interval

type profileEvent struct {
	at    float64
	delta int
}

// exec is Exec(w, avail, k) of eq. 5: the start and finish of a task of
// cost w that can start at ready on a server running at most k tasks at
// once, against the tasks already planned there: while n planned tasks run
// (n < k) the task progresses at 1/(n+1) of its speed; while k run it
// waits.
func (p profile) exec(w, ready float64, k int) (start, finish float64) {
	running := 0
	var evs []profileEvent
	for _, iv := range p {
		if iv.end <= ready {
			continue
		}
		if iv.start <= ready {
			running++
		} else {
			evs = append(evs, profileEvent{iv.start, +1})
		}
		evs = append(evs, profileEvent{iv.end, -1})
	}
	slices.SortFunc(evs, func(a, b profileEvent) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return a.delta - b.delta // ends before starts at one instant
	})
	t, left := ready, w
	start = math.NaN()
	for i := 0; ; {
		next := math.Inf(1)
		if i < len(evs) {
			next = evs[i].at
		}
		if running < k {
			if math.IsNaN(start) {
				start = t
			}
			n := float64(running + 1)
			if t+left*n <= next {
				return start, t + left*n
			}
			left -= (next - t) / n
		}
		t = next
		for i < len(evs) && evs[i].at == t {
			running += evs[i].delta
			i++
		}
	}
}
