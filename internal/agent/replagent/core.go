package replagent

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ActionKind is what the core asks its runner to do next.
type ActionKind uint8

// Kinds of Action.
const (
	// ActContinue: nothing to do; take the next event.
	ActContinue ActionKind = iota
	// ActDeliver: deliver Request (at Position) to the server, then call
	// Core.Delivered with its reply, or stop on an error.
	ActDeliver
	// ActTransfer: drop the stream, take a checkpoint from Peer and set it
	// on the server, then call Core.Transferred (or Core.TransferFailed);
	// then stream again from Core.Applied()+1.
	ActTransfer
	// ActStop: the agent stops with Err (the replica leaves the group).
	ActStop
)

// Action is the core's answer to an event.
type Action struct {
	Kind ActionKind
	// Position and Request are the entry to deliver (ActDeliver).
	Position uint64
	Request  *protocol.OrderedRequest
	// ReplyTo is the admin API base URL the reply goes to (ActDeliver),
	// resolved: the entry's reply_to, else the instance of the stream.
	ReplyTo string
	// Peer is the replica to take a checkpoint from (ActTransfer).
	Peer protocol.LogPeer
	// Err says why the agent stops (ActStop).
	Err error
}

// Outgoing is a reply to post: Reply to the admin API base URL To.
type Outgoing struct {
	To    string
	Reply protocol.ReplicaReply
}

// CoreConfig configures a Core.
type CoreConfig struct {
	// Group names the group in errors.
	Group string
	// Self is this replica's id: never picked as a peer to transfer from.
	Self string
	// Applied is the position applied before the agent started (0: none).
	Applied uint64
	// CanCheckpoint says whether the server can transfer state.
	CanCheckpoint bool
	// KeepReplies and KeepFor bound the reply cache; defaults
	// DefaultKeepReplies and DefaultKeepFor.
	KeepReplies int
	KeepFor     time.Duration
}

// Core is the agent's apply loop without its I/O: it takes the log
// stream's events in order (Step) and the outcomes of what it asked for
// (Delivered, Transferred, TransferFailed), and decides what to deliver,
// when to transfer state, which replies to post (TakeOutbox) and when to
// stop. It never skips an entry it received: an entry is delivered, or was
// applied before (at or below Applied), or the core stops. It reads the
// time only from its callers. Not safe for concurrent use.
type Core struct {
	cfg     CoreConfig
	applied uint64
	joined  bool
	// trim and peers are the latest hello's.
	trim  uint64
	peers []protocol.LogPeer
	// failed are the peers a transfer failed from, in this attempt.
	failed map[string]bool
	// waiting are reply requests for positions not applied yet: their
	// destinations.
	waiting map[uint64][]string
	replies *replyCache
	outbox  []Outgoing
}

// NewCore returns a core at cfg.Applied.
func NewCore(cfg CoreConfig) *Core {
	if cfg.KeepReplies <= 0 {
		cfg.KeepReplies = DefaultKeepReplies
	}
	if cfg.KeepFor <= 0 {
		cfg.KeepFor = DefaultKeepFor
	}
	return &Core{
		cfg:     cfg,
		applied: cfg.Applied,
		waiting: make(map[uint64][]string),
		replies: newReplyCache(cfg.KeepReplies, cfg.KeepFor),
	}
}

// Applied is the last position applied (delivered, or reached by a state
// transfer).
func (c *Core) Applied() uint64 { return c.applied }

// Step takes the next event of the stream, which came from the instance
// whose admin API base URL is source, and returns what to do.
func (c *Core) Step(ev protocol.LogEvent, source string, now time.Time) Action {
	switch ev.Type {
	case protocol.LogEventHello:
		return c.hello(ev)
	case protocol.LogEventEntry:
		c.joined = true
		if ev.Position == 0 {
			return c.stop(fmt.Errorf("replagent: group %s: the log stream sent an entry at position 0 (positions start at 1)", c.cfg.Group))
		}
		if ev.Position <= c.applied {
			return Action{} // applied before (a stream resumed below it)
		}
		if ev.Request == nil {
			return c.stop(fmt.Errorf("replagent: group %s: the log entry at position %d has no request: it cannot be decoded, and an entry is never skipped", c.cfg.Group, ev.Position))
		}
		return Action{Kind: ActDeliver, Position: ev.Position, Request: ev.Request, ReplyTo: dest(ev, source)}
	case protocol.LogEventReplyRequest:
		c.replyRequest(ev.Position, dest(ev, source), now)
		return Action{}
	case protocol.LogEventError:
		return c.streamError(ev)
	default: // heartbeat, and types this agent does not know yet
		return Action{}
	}
}

// dest is where the reply about ev goes.
func dest(ev protocol.LogEvent, source string) string {
	if ev.ReplyTo != "" {
		return ev.ReplyTo
	}
	return source
}

// hello takes a stream's first line: at the first one, the agent joins,
// by state transfer when it can.
func (c *Core) hello(ev protocol.LogEvent) Action {
	c.trim, c.peers = ev.Position, ev.Peers
	if c.joined {
		return Action{}
	}
	c.joined = true
	c.failed = nil
	if c.cfg.CanCheckpoint {
		if p, ok := c.pickPeer(); ok {
			return Action{Kind: ActTransfer, Peer: p}
		}
	}
	if c.trim > c.applied {
		return c.stop(c.behindError(c.trim))
	}
	return Action{}
}

// streamError takes an error event.
func (c *Core) streamError(ev protocol.LogEvent) Action {
	switch ev.Code {
	case protocol.CodeTrimmed:
		c.trim = max(c.trim, ev.Position)
		if c.trim <= c.applied {
			return Action{} // stale: nothing this replica needs is gone
		}
		c.failed = nil
		if c.cfg.CanCheckpoint {
			if p, ok := c.pickPeer(); ok {
				return Action{Kind: ActTransfer, Peer: p}
			}
		}
		return c.stop(c.behindError(c.trim))
	case protocol.CodeUndecodable:
		return c.stop(fmt.Errorf("replagent: group %s: the log entry at position %d cannot be decoded (%s); the replica stops rather than skip it", c.cfg.Group, ev.Position, ev.Message))
	case "closed", "unavailable":
		return Action{} // one instance's trouble: the source goes on elsewhere
	default:
		return c.stop(fmt.Errorf("replagent: group %s: the log stream ended at position %d with error %q: %s", c.cfg.Group, ev.Position, ev.Code, ev.Message))
	}
}

// behindError is the error of a replica that needs entries trimmed away.
func (c *Core) behindError(trim uint64) error {
	why := "its server cannot transfer state (GET " + protocol.StatePath + " answers 404, 405 or 501)"
	if c.cfg.CanCheckpoint {
		why = "no live replica that has applied that far could give a checkpoint"
	}
	return fmt.Errorf("replagent: group %s: the log is trimmed up to position %d, and this replica has applied only up to %d, so it cannot catch up by replaying the log; %s: the replica must be reset with state transfer (from a live replica whose server supports it)", c.cfg.Group, trim, c.applied, why)
}

// pickPeer picks the live replica that has applied the most, not this one
// nor one a transfer failed from in this attempt, that has applied at
// least up to the trim point.
func (c *Core) pickPeer() (protocol.LogPeer, bool) {
	var best protocol.LogPeer
	found := false
	for _, p := range c.peers {
		if p.ID == c.cfg.Self || p.Address == "" || c.failed[p.ID] || p.Applied == 0 || p.Applied < c.trim {
			continue
		}
		if !found || p.Applied > best.Applied {
			best, found = p, true
		}
	}
	return best, found
}

// Delivered records the server's reply to the entry at pos (its
// ActDeliver): the position is applied and the reply is posted to replyTo
// (and to whoever asked for it before).
func (c *Core) Delivered(pos uint64, replyTo string, r protocol.ReplicaReply, now time.Time) {
	r.Position = pos
	c.applied = pos
	c.replies.put(r, now)
	c.outbox = append(c.outbox, Outgoing{To: replyTo, Reply: r})
	for _, to := range c.waiting[pos] {
		if to != replyTo {
			c.outbox = append(c.outbox, Outgoing{To: to, Reply: r})
		}
	}
	delete(c.waiting, pos)
}

// Transferred records a state transfer: the server's state is the one at
// pos. Reply requests waiting for positions up to pos are answered
// evicted (this replica never ran them).
func (c *Core) Transferred(pos uint64) {
	c.applied = pos
	for p, tos := range c.waiting {
		if p <= pos {
			for _, to := range tos {
				c.outbox = append(c.outbox, Outgoing{To: to, Reply: protocol.ReplicaReply{Position: p, Evicted: true}})
			}
			delete(c.waiting, p)
		}
	}
}

// TransferFailed records that the transfer from peer failed with err, and
// returns what to do: try another peer, stream from Applied()+1 when the
// log still has it (ActContinue), or stop.
func (c *Core) TransferFailed(peer string, err error) Action {
	if c.failed == nil {
		c.failed = make(map[string]bool)
	}
	c.failed[peer] = true
	if p, ok := c.pickPeer(); ok {
		return Action{Kind: ActTransfer, Peer: p}
	}
	if c.trim > c.applied {
		return c.stop(fmt.Errorf("%w (the last transfer, from %s, failed: %w)", c.behindError(c.trim), peer, err))
	}
	return Action{}
}

// replyRequest answers a bridge that asks for the reply at pos again.
func (c *Core) replyRequest(pos uint64, to string, now time.Time) {
	if pos > c.applied {
		if len(c.waiting) < c.cfg.KeepReplies {
			c.waiting[pos] = append(c.waiting[pos], to)
		}
		return // posted when applied
	}
	r, ok := c.replies.get(pos, now)
	if !ok {
		r = protocol.ReplicaReply{Position: pos, Evicted: true}
	}
	c.outbox = append(c.outbox, Outgoing{To: to, Reply: r})
}

// TakeOutbox returns the replies to post, oldest first, and forgets them.
func (c *Core) TakeOutbox() []Outgoing {
	out := c.outbox
	c.outbox = nil
	return out
}

func (c *Core) stop(err error) Action { return Action{Kind: ActStop, Err: err} }
