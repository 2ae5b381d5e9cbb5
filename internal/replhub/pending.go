package replhub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// pending is one position whose replies this instance waits for or
// compares. Its fields are guarded by the hub's mu.
type pending struct {
	pos     uint64
	created time.Time
	// done is closed when the first reply arrives or every live replica
	// has said it evicted the reply.
	done   chan struct{}
	closed bool
	first  *Reply
	// firstAt is when first arrived: the compare window runs from it.
	firstAt time.Time
	// keys are the replies' status and body hash, by replica.
	keys map[string]string
	// evicted are the replicas that no longer have the reply.
	evicted map[string]bool
	// waiters counts the Order calls waiting on the position.
	waiters  int
	compared bool
	// asking is set for a retried request whose reply is not known yet:
	// the replicas are asked for it again on every stream that opens and
	// every askAgain (askedAt: the last time), until it comes — the agents
	// that have it may be between two streams (the instance they streamed
	// from died, the one whose bridge the retry reached) when it is first
	// asked.
	asking  bool
	askedAt time.Time
}

// askAgain is how often a reply request still unanswered is repeated
// (Run's rounds permitting).
const askAgain = 500 * time.Millisecond

// early is a reply that came for a position not pending.
type early struct {
	replica string
	r       protocol.ReplicaReply
	at      time.Time
}

// await returns the pending of pos, with one more waiter. When the request
// had been appended before and no reply is known, the live replicas are
// asked for it again.
func (h *Hub) await(pos uint64, existed bool) *pending {
	live := h.liveIDs()
	h.mu.Lock()
	now := h.clk.Now()
	p := h.pending[pos]
	if p == nil {
		p = &pending{pos: pos, created: now, done: make(chan struct{}), keys: make(map[string]string), evicted: make(map[string]bool)}
		h.pending[pos] = p
		var divs []Divergence
		for _, e := range h.early[pos] {
			divs = append(divs, h.takeLocked(p, e.replica, e.r, live, now)...)
		}
		delete(h.early, pos)
		defer h.diverged(divs)
	}
	p.waiters++
	var subs []*subscriber
	asking := existed && p.first == nil
	if asking {
		// Ask anew: replicas that evicted it before may have been
		// replaced since.
		p.asking, p.askedAt = true, now
		clear(p.evicted)
		for s := range h.subs {
			subs = append(subs, s)
		}
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.ask(ask{pos: pos})
	}
	if asking && h.opts.AskPeers != nil {
		h.opts.AskPeers(pos)
	}
	return p
}

// askAgainAt repeats, at now, the reply requests of the retried requests
// still without a reply that were last asked askAgain ago or more: to this
// instance's streams and, through AskPeers, to the other instances'.
func (h *Hub) askAgainAt(now time.Time) {
	h.mu.Lock()
	var again []uint64
	for _, p := range h.pending {
		if p.asking && p.first == nil && !p.closed && p.waiters > 0 && now.Sub(p.askedAt) >= askAgain {
			p.askedAt = now
			again = append(again, p.pos)
		}
	}
	var subs []*subscriber
	if len(again) > 0 {
		for s := range h.subs {
			subs = append(subs, s)
		}
	}
	h.mu.Unlock()
	for _, pos := range again {
		for _, s := range subs {
			s.ask(ask{pos: pos})
		}
		if h.opts.AskPeers != nil {
			h.opts.AskPeers(pos)
		}
	}
}

// askNewLocked queues on a stream that opens the reply requests of the
// retried requests still without a reply. Caller holds h.mu.
func (h *Hub) askNewLocked(s *subscriber) {
	for _, p := range h.pending {
		if p.asking && p.first == nil && !p.closed && p.waiters > 0 {
			s.ask(ask{pos: p.pos})
		}
	}
}

// AskFor passes another instance's reply request on to this instance's
// streams: their agents post the reply at pos to replyTo (that instance's
// admin API).
func (h *Hub) AskFor(pos uint64, replyTo string) {
	h.mu.Lock()
	var subs []*subscriber
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.ask(ask{pos: pos, replyTo: replyTo})
	}
}

// release drops one waiter of p.
func (h *Hub) release(p *pending) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p.waiters--
	h.forgetLocked(p, h.clk.Now())
}

// forgetLocked deletes p once nobody waits on it and its replies are
// compared (or none came within the window). Caller holds h.mu.
func (h *Hub) forgetLocked(p *pending, now time.Time) {
	if p.waiters > 0 {
		return
	}
	if p.compared || (p.first == nil && now.Sub(p.created) >= h.window) {
		delete(h.pending, p.pos)
	}
}

// Replies takes replica's replies.
func (h *Hub) Replies(replica string, b protocol.ReplyBatch) {
	live := h.liveIDs()
	h.mu.Lock()
	now := h.clk.Now()
	var divs []Divergence
	for _, r := range b.Replies {
		if p := h.pending[r.Position]; p != nil {
			divs = append(divs, h.takeLocked(p, replica, r, live, now)...)
			continue
		}
		if len(h.early) >= maxEarly {
			h.log.Warn("replicated reply dropped: too many replies for positions not awaited", "group", h.opts.Group, "replica", replica, "position", r.Position)
			continue
		}
		h.early[r.Position] = append(h.early[r.Position], early{replica: replica, r: r, at: now})
	}
	h.mu.Unlock()
	h.diverged(divs)
}

// takeLocked records replica's reply r to p, and compares p's replies when
// every live replica has answered. Caller holds h.mu.
func (h *Hub) takeLocked(p *pending, replica string, r protocol.ReplicaReply, live []string, now time.Time) []Divergence {
	if r.Evicted {
		p.evicted[replica] = true
		if p.first == nil && everyOf(live, p.evicted) {
			h.closeLocked(p)
		}
		return nil
	}
	if _, dup := p.keys[replica]; dup {
		return nil
	}
	p.keys[replica] = replyKey(r)
	if p.first == nil {
		p.first = &Reply{Position: p.pos, Replica: replica, Status: r.Status, Header: r.Header, Body: r.Body}
		p.firstAt = now
		h.closeLocked(p)
	}
	if !p.compared && everyOf(live, p.keys) {
		return h.compareLocked(p, live, now)
	}
	return nil
}

func (h *Hub) closeLocked(p *pending) {
	if !p.closed {
		p.closed = true
		close(p.done)
	}
}

// compareLocked closes p's comparison: the replies of live replicas are
// compared, and a replica whose reply differs from the majority's is a
// divergence (ejected with three or more replies, an alert with two).
// Caller holds h.mu.
func (h *Hub) compareLocked(p *pending, live []string, now time.Time) []Divergence {
	p.compared = true
	defer h.forgetLocked(p, now)
	return Compare(h.opts.Group, p.pos, p.first.Replica, p.keys, live)
}

// Compare is the divergence rule: among the replies (keys, by replica) of
// the live replicas, with three or more, a key held by more than half is
// the majority and every replica with another key diverges, ejected; with
// two, or no majority, every replica whose key differs from the first
// reply's (by firstReplica) is an alert, ejecting nobody.
func Compare(group string, pos uint64, firstReplica string, keys map[string]string, live []string) []Divergence {
	counts := make(map[string]int)
	var ids []string
	for _, id := range live {
		if k, ok := keys[id]; ok {
			counts[k]++
			ids = append(ids, id)
		}
	}
	if len(counts) < 2 {
		return nil
	}
	slices.Sort(ids)
	want, eject := keys[firstReplica], false
	if len(ids) >= 3 {
		for k, n := range counts {
			if 2*n > len(ids) {
				want, eject = k, true
			}
		}
	}
	var out []Divergence
	for _, id := range ids {
		if keys[id] != want {
			out = append(out, Divergence{Group: group, Position: pos, Replica: id, Ejected: eject, Want: want, Got: keys[id]})
		}
	}
	return out
}

// replyKey is what replies are compared by: the status and a hash of the
// body.
func replyKey(r protocol.ReplicaReply) string {
	sum := sha256.Sum256(r.Body)
	return fmt.Sprintf("%d sha256:%s", r.Status, hex.EncodeToString(sum[:8]))
}

// everyOf reports whether every id in ids (at least one) is in m.
func everyOf[V any](ids []string, m map[string]V) bool {
	if len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		if _, ok := m[id]; !ok {
			return false
		}
	}
	return true
}

// diverged reports divs, outside the hub's lock.
func (h *Hub) diverged(divs []Divergence) {
	for _, d := range divs {
		h.log.Warn("replicated reply diverged", "group", d.Group, "position", d.Position, "replica", d.Replica, "ejected", d.Ejected, "want", d.Want, "got", d.Got)
		if h.opts.OnDivergence != nil {
			h.opts.OnDivergence(d)
		}
	}
}

// liveIDs are the ids of the live replicas (read before taking h.mu:
// Live may take the balancer's locks).
func (h *Hub) liveIDs() []string {
	peers := h.opts.Live()
	ids := make([]string, len(peers))
	for i, p := range peers {
		ids[i] = p.ID
	}
	return ids
}
