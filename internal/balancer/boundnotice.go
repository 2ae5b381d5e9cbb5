package balancer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Bound notices. A client bound at this instance's front door by a move
// it looked up in etcd (leadermoves.go) was planned by the group's
// leader, whose analyzer keeps the move pending, holding back the
// group's next plan, until it hears of the binding. When this instance
// does not lead the group, it tells the leader: the binding is queued
// (never blocking the front door), and one sender, started by Start,
// drains the queue,
// POSTing one protocol.BoundMoves per group and term to the leader's
// /v1/cluster/bound (its admin URL by Options.PeerURL, the admin token of
// Options.PeerToken, through Options.PeerClient). The leader completes the
// moves and deletes their keys (TakeBound). The queue holds at most
// MaxQueuedNotices bindings; more are dropped (counted, logged at debug):
// their moves then expire at the leader as before. A notice that cannot
// be sent counts in fulcrum_cluster_push_failures_total{kind="bound"}
// (peerfailures.go) and is not sent again.

// BoundPath is the route of the bound notices.
const BoundPath = "/v1/cluster/bound"

// MaxQueuedNotices bounds the bindings queued for the leaders.
const MaxQueuedNotices = 4096

// noticeTimeout bounds one notice's POST.
const noticeTimeout = 2 * time.Second

// boundNotice is one binding queued for the group's leader.
type boundNotice struct {
	group string
	term  uint64
	move  protocol.BoundMove
}

// noticeQueue is the bindings waiting for the sender. Safe for concurrent
// use.
type noticeQueue struct {
	mu      sync.Mutex
	q       []boundNotice
	dropped uint64
	wake    chan struct{} // capacity 1: a pending wake-up
	// started: the sender runs (guarded by the Balancer's mu).
	started bool
}

// noticeBound queues the binding of client to replica in group, by a move
// of term, for the group's leader. It never blocks.
func (b *Balancer) noticeBound(group string, term uint64, client, replica string) {
	if b.opts.Leadership == nil || b.opts.PeerURL == nil || term == 0 {
		return
	}
	n := &b.notices
	n.mu.Lock()
	if b.ctx.Err() != nil {
		n.mu.Unlock()
		return
	}
	if len(n.q) >= MaxQueuedNotices {
		n.dropped++
		dropped := n.dropped
		n.mu.Unlock()
		b.log.Debug("bound notice queue full: the leader's analyzer expires the move instead", "group", group, "client", client, "dropped_total", dropped)
		return
	}
	n.q = append(n.q, boundNotice{group: group, term: term, move: protocol.BoundMove{Client: client, Replica: replica}})
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// startNoticeSender starts the sender, in a cluster, once. Called by
// Start with b.mu held, while the balancer is not closed.
func (b *Balancer) startNoticeSender() {
	n := &b.notices
	if b.opts.Leadership == nil || b.opts.PeerURL == nil || b.opts.Moves == nil || n.started {
		return
	}
	n.started = true
	b.goAsync(b.sendNotices)
}

// sendNotices is the sender: it drains the queue whenever woken, until
// the balancer shuts down.
func (b *Balancer) sendNotices() {
	n := &b.notices
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-n.wake:
		}
		n.mu.Lock()
		batch := n.q
		n.q = nil
		n.mu.Unlock()
		for _, v := range noticeBatches(batch) {
			b.sendNotice(v)
		}
	}
}

// noticeBatches groups queued bindings into notices, one per group and
// term in order of first arrival, each client once (its last binding),
// at most protocol.MaxBoundMoves moves each.
func noticeBatches(q []boundNotice) []protocol.BoundMoves {
	type key struct {
		group string
		term  uint64
	}
	var order []key
	byKey := map[key][]protocol.BoundMove{}
	at := map[key]map[string]int{}
	for _, e := range q {
		k := key{e.group, e.term}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
			at[k] = map[string]int{}
			byKey[k] = nil
		}
		if i, ok := at[k][e.move.Client]; ok {
			byKey[k][i] = e.move
			continue
		}
		at[k][e.move.Client] = len(byKey[k])
		byKey[k] = append(byKey[k], e.move)
	}
	var out []protocol.BoundMoves
	for _, k := range order {
		ms := byKey[k]
		for len(ms) > 0 {
			n := min(len(ms), protocol.MaxBoundMoves)
			out = append(out, protocol.BoundMoves{Group: k.group, Term: k.term, Moves: ms[:n:n]})
			ms = ms[n:]
		}
	}
	return out
}

// sendNotice sends v to the group's leader as this instance knows it;
// when this instance has come to lead the group, it takes v itself.
func (b *Balancer) sendNotice(v protocol.BoundMoves) {
	st, ok := b.opts.Leadership.Status(v.Group)
	if !ok || st.Leader == "" {
		b.log.Debug("bound notice dropped: the group has no leader now; its moves expire", "group", v.Group, "term", v.Term, "moves", len(v.Moves))
		return
	}
	if st.State == leader.Leader {
		v.Instance = b.opts.Instance
		if ans, err := b.TakeBound(v); err != nil || !ans.Applied {
			b.log.Debug("bound notice not applied here", "group", v.Group, "term", v.Term, "reason", ans.Reason, "err", err)
		}
		return
	}
	base, ok := b.opts.PeerURL(st.Leader)
	if !ok {
		b.pushFailed(pushKindBound, v.Group, st.Leader, fmt.Errorf("balancer: admin URL of instance %s unknown", st.Leader))
		return
	}
	v.Instance = b.opts.Instance
	body, err := json.Marshal(v)
	if err != nil {
		b.log.Error("cannot encode a bound notice", "group", v.Group, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, noticeTimeout)
	defer cancel()
	var ans protocol.BoundAnswer
	if err := b.postPeer(ctx, base, BoundPath, body, &ans); err != nil {
		b.pushFailed(pushKindBound, v.Group, base, err)
		return
	}
	if !ans.Applied {
		b.log.Debug("bound notice not applied by the leader", "group", v.Group, "leader", st.Leader, "term", v.Term, "reason", ans.Reason)
	}
}
