package replagent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// poster posts the replies the apply loop hands it, from one goroutine:
// whatever piled up while a post was in flight goes in the next batch, one
// batch per destination. A batch that fails twice is dropped with a
// warning: the reply stays in the cache, and a bridge that still needs it
// asks for it again on the log stream. Safe for concurrent use.
type poster struct {
	admin Admin
	log   *slog.Logger
	wake  chan struct{}
	mu    sync.Mutex
	queue []Outgoing // guarded by mu
}

// add queues out and wakes the poster.
func (p *poster) add(out []Outgoing) {
	if len(out) == 0 {
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, out...)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run posts until ctx ends. A post in flight when it ends is finished
// (bounded by postTimeout), not cut short.
func (p *poster) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postTimeout)
			p.flush(fctx)
			cancel()
		}
	}
}

// postTimeout bounds one flush of the poster.
const postTimeout = 5 * time.Second

// flush posts everything queued, in order within each destination.
func (p *poster) flush(ctx context.Context) {
	p.mu.Lock()
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	if len(q) == 0 {
		return
	}
	var order []string
	byDest := make(map[string][]protocol.ReplicaReply)
	for _, o := range q {
		if _, ok := byDest[o.To]; !ok {
			order = append(order, o.To)
		}
		byDest[o.To] = append(byDest[o.To], o.Reply)
	}
	for _, to := range order {
		err := p.admin.PostReplies(ctx, to, byDest[to])
		if err != nil && ctx.Err() == nil {
			err = p.admin.PostReplies(ctx, to, byDest[to]) // once more: a kept-alive connection may have just closed
		}
		if err != nil {
			p.log.Warn("posting replies failed; dropped (kept for reply requests)", "to", to, "replies", len(byDest[to]), "err", err)
		}
	}
}
