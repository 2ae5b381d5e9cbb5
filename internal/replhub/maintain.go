package replhub

import (
	"context"
	"slices"
	"time"
)

// Run closes compare windows, forgets what nobody waits for, asks again
// for the replies retried requests still wait for, and trims the log,
// until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	every := min(max(h.window/10, 50*time.Millisecond), time.Second)
	t := h.clk.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C():
			h.maintain(ctx, now)
		}
	}
}

// maintain runs one round of Run at now.
func (h *Hub) maintain(ctx context.Context, now time.Time) {
	live := h.liveIDs()
	h.mu.Lock()
	var divs []Divergence
	for _, p := range h.pending {
		if p.first != nil && !p.compared && now.Sub(p.firstAt) >= h.window {
			divs = append(divs, h.compareLocked(p, live, now)...)
		}
		h.forgetLocked(p, now)
	}
	for pos, es := range h.early {
		if now.Sub(es[len(es)-1].at) >= h.window {
			delete(h.early, pos)
		}
	}
	reports := make(map[string]applied, len(live))
	for _, id := range live {
		if a, ok := h.applied[id]; ok {
			reports[id] = a
		}
	}
	for id := range h.applied {
		if !slices.Contains(live, id) && now.Sub(h.applied[id].at) >= 10*h.window {
			delete(h.applied, id)
		}
	}
	to, trim := trimPoint(live, reports, h.full, h.trimmed)
	h.mu.Unlock()
	h.diverged(divs)
	h.askAgainAt(now)
	if !trim {
		return
	}
	if err := h.opts.Log.Trim(ctx, to); err != nil {
		if ctx.Err() == nil {
			h.log.Warn("replicated log not trimmed", "group", h.opts.Group, "to", to, "err", err)
		}
		return
	}
	h.mu.Lock()
	h.trimmed, h.full = max(h.trimmed, to), false
	h.mu.Unlock()
}

// trimPoint decides how far the log may be trimmed: up to the lowest
// position the live replicas have applied, once every live replica has
// reported, when all of them can checkpoint (a replica that joins later
// takes a checkpoint instead of replaying), or when the log is full (a
// group that cannot checkpoint keeps its whole log until max_log_bytes
// forces a trim; replicas that join afterwards cannot). It reports false
// when there is nothing to trim beyond trimmed.
func trimPoint(live []string, reports map[string]applied, full bool, trimmed uint64) (uint64, bool) {
	if len(live) == 0 {
		return 0, false
	}
	var low uint64
	all := true
	for i, id := range live {
		a, ok := reports[id]
		if !ok {
			return 0, false
		}
		if i == 0 || a.pos < low {
			low = a.pos
		}
		all = all && a.checkpoints
	}
	if !all && !full {
		return 0, false
	}
	return low, low > trimmed
}
