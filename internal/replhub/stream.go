package replhub

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// heartbeatEvery is how long a stream may stay silent before a heartbeat.
const heartbeatEvery = time.Second

// askBuffer bounds the reply requests queued for one stream; beyond it a
// request is dropped (the bridge waiting for it times out and its client
// retries, which asks again).
const askBuffer = 1024

// subscriber is one open log stream.
type subscriber struct {
	replica string
	asks    chan ask
}

// ask is one reply request: the position, and where the reply goes (""
// this instance).
type ask struct {
	pos     uint64
	replyTo string
}

// ask queues a reply request without blocking.
func (s *subscriber) ask(a ask) {
	select {
	case s.asks <- a:
	default:
	}
}

// Stream yields the log events of replica's stream from position from: a
// hello, the entries in order with reply requests between them,
// heartbeats after one to two seconds of silence, and, when the stream cannot go
// on, an error event, after which it ends. It ends quietly when ctx ends.
func (h *Hub) Stream(ctx context.Context, replica string, from uint64) func(yield func(protocol.LogEvent) bool) {
	return func(yield func(protocol.LogEvent) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sub := &subscriber{replica: replica, asks: make(chan ask, askBuffer)}
		h.mu.Lock()
		h.subs[sub] = struct{}{}
		h.askNewLocked(sub)
		trimmed := h.trimmed
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			delete(h.subs, sub)
			h.mu.Unlock()
		}()
		if !yield(protocol.LogEvent{Type: protocol.LogEventHello, Position: trimmed, Peers: h.peers(replica)}) {
			return
		}

		type item struct {
			e   replog.Entry
			err error
		}
		items := make(chan item)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for e, err := range h.opts.Log.Watch(ctx, from) {
				select {
				case items <- item{e, err}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		defer func() { cancel(); <-done }()

		beat := h.clk.NewTicker(heartbeatEvery)
		defer beat.Stop()
		quiet := true
		for {
			var ev protocol.LogEvent
			select {
			case <-ctx.Done():
				return
			case it := <-items:
				if it.err != nil {
					ev, ok := h.endEvent(it.err)
					if ok {
						yield(ev)
					}
					return
				}
				ev = h.entryEvent(it.e)
				if ev.Type == protocol.LogEventError {
					yield(ev)
					return
				}
			case a := <-sub.asks:
				ev = protocol.LogEvent{Type: protocol.LogEventReplyRequest, Position: a.pos, Origin: h.opts.Instance, ReplyTo: a.replyTo}
			case <-beat.C():
				if !quiet {
					quiet = true
					continue
				}
				ev = protocol.LogEvent{Type: protocol.LogEventHeartbeat}
			}
			quiet = false
			if !yield(ev) {
				return
			}
		}
	}
}

// entryEvent is e as a stream event, or an undecodable error event.
func (h *Hub) entryEvent(e replog.Entry) protocol.LogEvent {
	var req protocol.OrderedRequest
	if err := json.Unmarshal(e.Payload, &req); err != nil || (req.Kind != protocol.KindHTTP && req.Kind != protocol.KindGIOP) {
		msg := "the payload is not an ordered request"
		if err != nil {
			msg += ": " + err.Error()
		}
		return protocol.LogEvent{Type: protocol.LogEventError, Code: protocol.CodeUndecodable, Position: e.Position,
			Message: (&replog.DecodeError{Position: e.Position, Err: errors.New(msg)}).Error()}
	}
	ev := protocol.LogEvent{Type: protocol.LogEventEntry, Position: e.Position, Session: e.Session, Seq: e.Seq,
		Origin: e.Origin, Appended: e.Appended, Request: &req}
	if e.Origin != h.opts.Instance && h.opts.ReplyTo != nil {
		ev.ReplyTo = h.opts.ReplyTo(e.Origin)
	}
	return ev
}

// endEvent is the error event that ends a stream on err (false: ctx ended,
// nothing to say).
func (h *Hub) endEvent(err error) (protocol.LogEvent, bool) {
	var trimmed *replog.TrimmedError
	var undecodable *replog.DecodeError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return protocol.LogEvent{}, false
	case errors.As(err, &trimmed):
		return protocol.LogEvent{Type: protocol.LogEventError, Code: protocol.CodeTrimmed, Position: trimmed.TrimmedTo, Message: err.Error()}, true
	case errors.As(err, &undecodable):
		return protocol.LogEvent{Type: protocol.LogEventError, Code: protocol.CodeUndecodable, Position: undecodable.Position, Message: err.Error()}, true
	case errors.Is(err, replog.ErrClosed):
		return protocol.LogEvent{Type: protocol.LogEventError, Code: "closed", Message: err.Error()}, true
	}
	return protocol.LogEvent{Type: protocol.LogEventError, Code: "unavailable", Message: err.Error()}, true
}

// peers are the live replicas other than replica, with their applied
// positions.
func (h *Hub) peers(replica string) []protocol.LogPeer {
	live := h.opts.Live()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []protocol.LogPeer
	for _, p := range live {
		if p.ID != replica {
			out = append(out, protocol.LogPeer{ID: p.ID, Address: p.Address, Applied: h.applied[p.ID].pos})
		}
	}
	return out
}
