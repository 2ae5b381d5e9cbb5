package replhub

import (
	"context"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Bounds of the outcall replies kept: as many as the agents keep of their
// replies.
const (
	// OutcallKeep is how long an outcall's reply is kept.
	OutcallKeep = 10 * time.Minute
	// OutcallMax bounds the outcall replies kept.
	OutcallMax = 10_000
)

// Forwarder sends the first copy of an outcall to its callee (with the
// key as Idempotency-Key) and returns the callee's reply; an error means
// the callee could not be reached.
type Forwarder func(ctx context.Context, key string, c protocol.Outcall) (protocol.OutcallReply, error)

// Outcalls deduplicates the replicas' copies of their servers' outgoing
// calls (replicated callers): the first copy of a key is forwarded, every
// copy gets its reply, and the reply is kept OutcallKeep (at most
// OutcallMax of them) for copies that come late. Safe for concurrent use.
type Outcalls struct {
	forward Forwarder
	now     func() time.Time

	mu    sync.Mutex
	calls *lru.Cache[string, *outcall]
}

// outcall is one key's forwarding: done is closed when reply is set.
type outcall struct {
	done  chan struct{}
	reply protocol.OutcallReply
	at    time.Time
}

// NewOutcalls returns an empty table forwarding with forward, on the clock
// now (time.Now when nil).
func NewOutcalls(forward Forwarder, now func() time.Time) *Outcalls {
	if now == nil {
		now = time.Now
	}
	calls, _ := lru.New[string, *outcall](OutcallMax) // only a size <= 0 fails
	return &Outcalls{forward: forward, now: now, calls: calls}
}

// Call answers one copy of c: the first copy of c.Key is forwarded (while
// the others wait for it), the others get its reply. A callee that cannot
// be reached is a 502 reply, the same for every copy. It returns ctx's
// error if ctx ends first; the forwarding goes on for the other copies.
func (o *Outcalls) Call(ctx context.Context, c protocol.Outcall) (protocol.OutcallReply, error) {
	o.mu.Lock()
	oc, ok := o.calls.Get(c.Key)
	if ok && oc.isDone() && o.now().Sub(oc.at) >= OutcallKeep {
		ok = false
	}
	if !ok {
		oc = &outcall{done: make(chan struct{})}
		o.calls.Add(c.Key, oc)
		// Forwarded on its own: a copy whose caller gives up must not
		// cancel the call the others wait for.
		go o.run(oc, c)
	}
	o.mu.Unlock()
	select {
	case <-oc.done:
		return oc.reply, nil
	case <-ctx.Done():
		return protocol.OutcallReply{}, ctx.Err()
	}
}

// forwardTimeout bounds one forwarding.
const forwardTimeout = time.Minute

func (o *Outcalls) run(oc *outcall, c protocol.Outcall) {
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	r, err := o.forward(ctx, c.Key, c)
	if err != nil {
		r = protocol.OutcallReply{Status: 502, Error: fmt.Sprintf("replhub: outcall %s to %s: %v", c.Key, c.URL, err)}
	}
	o.mu.Lock()
	oc.reply, oc.at = r, o.now()
	close(oc.done)
	o.mu.Unlock()
}

func (oc *outcall) isDone() bool {
	select {
	case <-oc.done:
		return true
	default:
		return false
	}
}
