package boltstore

import "github.com/fulcrum-lb/fulcrum/internal/store"

// history is the events of the latest revisions, kept in memory for
// Watch: bbolt stores only each key's latest state. Revisions up to
// compacted are gone (at Open, every revision so far). Not safe for
// concurrent use: the Store's mu guards it.
type history struct {
	keep      int // how many revisions to keep
	compacted int64
	revs      []revision // ascending, all above compacted
}

// revision is the events of one committed transaction.
type revision struct {
	rev    int64
	events []store.Event
}

// append records the events of revision rev, the newest, dropping the
// oldest revision beyond keep.
func (h *history) append(rev int64, events []store.Event) {
	h.revs = append(h.revs, revision{rev: rev, events: events})
	if len(h.revs) > h.keep {
		h.compact(h.revs[len(h.revs)-h.keep-1].rev)
	}
}

// compact drops the revisions up to and including rev.
func (h *history) compact(rev int64) {
	if rev <= h.compacted {
		return
	}
	h.compacted = rev
	i := 0
	for i < len(h.revs) && h.revs[i].rev <= rev {
		i++
	}
	h.revs = append([]revision(nil), h.revs[i:]...)
}

// since returns the revisions from rev on whose events touch prefix,
// filtered to those events, and ok false when rev is compacted.
func (h *history) since(rev int64, prefix string) (out []store.WatchResponse, ok bool) {
	if rev <= h.compacted {
		return nil, false
	}
	for _, r := range h.revs {
		if r.rev < rev {
			continue
		}
		var evs []store.Event
		for _, e := range r.events {
			if len(e.KV.Key) >= len(prefix) && e.KV.Key[:len(prefix)] == prefix {
				evs = append(evs, e)
			}
		}
		if len(evs) > 0 {
			out = append(out, store.WatchResponse{Rev: r.rev, Events: evs})
		}
	}
	return out, true
}

// last is the newest revision recorded (or compacted).
func (h *history) last() int64 {
	if len(h.revs) == 0 {
		return h.compacted
	}
	return h.revs[len(h.revs)-1].rev
}
