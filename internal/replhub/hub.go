// Package replhub is the balancer's side of a replicated group
// (docs/replication.md): between the group's bridges (front doors), which
// order clients' requests and wait for their replies, and the replicas'
// agents, which stream the group's log, apply it and post their replies.
//
// One Hub per replicated group per instance. A bridge calls Order: the hub
// appends the request to the group's log (replog.Log), waits for the first
// reply a replica posts for that position, and gives it to the bridge; it
// then compares the other replicas' replies with it for CompareWindow and
// reports a replica whose reply differs from the majority (Divergence). The
// admin API serves agents through Stream (the log, with the hub's reply
// requests between entries), Applied and Replies.
//
// The hub takes its clock from Options and opens no sockets.
package replhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// DefaultCompareWindow is how long the hub waits for the other replicas'
// replies after the first one.
const DefaultCompareWindow = 5 * time.Second

// Peer is a live replica of the group, as the registry knows it.
type Peer struct {
	// ID is the replica's id; Address where its agent listens.
	ID, Address string
}

// Options configure a Hub.
type Options struct {
	// Group is the group's name.
	Group string
	// Instance is this instance's name: the Origin of its appends.
	Instance string
	// Log is the group's log; the hub does not close it.
	Log replog.Log
	// Live returns the group's live replicas (active, not ejected, not
	// down), read at every decision.
	Live func() []Peer
	// ReplyTo maps an instance name to the base URL of its admin API, for
	// the reply_to of entries other instances appended (cluster mode); nil
	// or "" for this instance.
	ReplyTo func(instance string) string
	// AskPeers, when set, passes a reply request on to the other
	// instances of a cluster (whose streams may hold the agents that have
	// the reply); they call AskFor with this instance's admin URL.
	AskPeers func(pos uint64)
	// CompareWindow is how long replies are compared after the first;
	// default DefaultCompareWindow.
	CompareWindow time.Duration
	// OnDivergence is called (outside the hub's locks) for each replica
	// whose reply differed; nil ignores them.
	OnDivergence func(Divergence)
	// Clock defaults to clock.Real().
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Call is one ordered request, as a bridge gives it.
type Call struct {
	// Session and Seq identify the request (replog.Append).
	Session string
	Seq     uint64
	// Request is the request; the hub encodes it as the entry's payload.
	Request *protocol.OrderedRequest
}

// Reply is the first reply to an ordered request.
type Reply struct {
	// Position is the entry's position.
	Position uint64
	// Replica is the id of the replica that sent it.
	Replica string
	// Status, Header and Body are as in protocol.ReplicaReply.
	Status int
	Header http.Header
	Body   []byte
	// Duplicate is true when the request had been appended before (a
	// retry): the reply is the original one.
	Duplicate bool
	// Append is how long the append to the log took; Wait how long the
	// first reply took after it (the bridge's Server-Timing).
	Append, Wait time.Duration
}

// Divergence is one replica's reply that differed from the others'.
type Divergence struct {
	Group    string
	Position uint64
	// Replica differs from the majority (Ejected: it is to leave the
	// group), or, with two replicas, from the other one (Ejected false:
	// an alert only).
	Replica string
	Ejected bool
	// Want is the majority's (or the first reply's) status and body hash;
	// Got the replica's.
	Want, Got string
}

// ErrNoReplicas is returned by Order when the group has no live replica:
// nothing was appended.
var ErrNoReplicas = errors.New("replhub: the group has no live replica")

// ReplyExpiredError is returned by Order for a retried request whose
// entry was applied but whose reply no live replica still has (409
// reply_expired).
type ReplyExpiredError struct {
	Group    string
	Position uint64
}

func (e *ReplyExpiredError) Error() string {
	return fmt.Sprintf("replhub: group %s: the reply to the request at position %d has expired on every live replica", e.Group, e.Position)
}

// Hub is the replicated side of one group on one instance. Safe for
// concurrent use.
type Hub struct {
	opts   Options
	clk    clock.Clock
	log    *slog.Logger
	window time.Duration

	// lastWrite maps a session to the position of its last ordered
	// request (read-your-writes); bounded, least recently used out.
	lastWrite *lru.Cache[string, uint64]

	mu sync.Mutex
	// pending are the positions whose replies this instance waits for or
	// still compares; guarded by mu.
	pending map[uint64]*pending
	// early are replies for positions not (yet) pending: a reply can
	// beat Order's bookkeeping right after the append. Guarded by mu.
	early map[uint64][]early
	// applied are the replicas' applied reports; guarded by mu.
	applied map[string]applied
	// subs are the open log streams; guarded by mu.
	subs map[*subscriber]struct{}
	// trimmed is the trim point this hub set (0: none yet); full is set
	// when an append found the log full. Guarded by mu.
	trimmed uint64
	full    bool
}

// maxSessions bounds the sessions whose last write the hub remembers.
const maxSessions = 1 << 18

// maxEarly bounds the replies kept for positions not pending.
const maxEarly = 1 << 14

// New returns the hub of opts.Group. Run must run for applied positions to
// trim the log and for compare windows to close.
func New(opts Options) *Hub {
	h := &Hub{
		opts:    opts,
		clk:     opts.Clock,
		log:     opts.Logger,
		window:  opts.CompareWindow,
		pending: make(map[uint64]*pending),
		early:   make(map[uint64][]early),
		applied: make(map[string]applied),
		subs:    make(map[*subscriber]struct{}),
	}
	if h.clk == nil {
		h.clk = clock.Real()
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.window <= 0 {
		h.window = DefaultCompareWindow
	}
	if h.opts.Live == nil {
		h.opts.Live = func() []Peer { return nil }
	}
	h.lastWrite, _ = lru.New[string, uint64](maxSessions) // only a size <= 0 fails
	return h
}

// Order appends c to the log and waits for the first reply to it, until
// ctx ends. A request appended before (same session and seq while the
// session lives) is not appended again: its reply is asked of the live
// replicas again and Reply.Duplicate is set. Errors: ErrNoReplicas,
// *replog.PayloadTooLargeError (413), *replog.LogFullError (507),
// replog.ErrBadSession (400), *ReplyExpiredError (409), ctx's error, or
// the log's (503).
func (h *Hub) Order(ctx context.Context, c Call) (Reply, error) {
	if len(h.opts.Live()) == 0 {
		return Reply{}, ErrNoReplicas
	}
	payload, err := json.Marshal(c.Request)
	if err != nil {
		return Reply{}, fmt.Errorf("replhub: encoding the request: %w", err)
	}
	start := h.clk.Now()
	pos, existed, err := h.opts.Log.AppendOrGet(ctx, replog.Append{Session: c.Session, Seq: c.Seq, Payload: payload, Origin: h.opts.Instance})
	if err != nil {
		if errors.Is(err, replog.ErrLogFull) {
			h.mu.Lock()
			h.full = true
			h.mu.Unlock()
		}
		return Reply{}, err
	}
	// Concurrent calls of one session reach here in any order: the
	// compare and the store are one step, or an earlier position could
	// overwrite a later one.
	h.mu.Lock()
	if last, ok := h.lastWrite.Get(c.Session); !ok || last < pos {
		h.lastWrite.Add(c.Session, pos)
	}
	h.mu.Unlock()
	appended := h.clk.Now()
	p := h.await(pos, existed)
	defer h.release(p)
	select {
	case <-p.done:
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.first == nil {
		return Reply{}, &ReplyExpiredError{Group: h.opts.Group, Position: pos}
	}
	r := *p.first
	r.Duplicate = existed
	r.Append, r.Wait = appended.Sub(start), h.clk.Now().Sub(appended)
	return r, nil
}

// LastWrite is the position of the session's last ordered request this
// hub saw (0: none): a read-only call of the session goes to a replica
// whose applied position (AppliedBy) is at least it.
func (h *Hub) LastWrite(session string) uint64 {
	pos, _ := h.lastWrite.Get(session)
	return pos
}

// AppliedBy is the last position replica reported applied (0: none).
func (h *Hub) AppliedBy(replica string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.applied[replica].pos
}

// Applied records replica's applied report.
func (h *Hub) Applied(replica string, r protocol.AppliedReport) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applied[replica] = applied{pos: r.Applied, checkpoints: r.Checkpoints, at: h.clk.Now()}
}

// applied is one replica's last applied report.
type applied struct {
	pos         uint64
	checkpoints bool
	at          time.Time
}
