package registry

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults and bounds of a group's Queue.
const (
	DefaultQueueTimeout = time.Second
	MaxQueueLimit       = 1_000_000
	MaxQueueLead        = 10 * time.Second
)

func queueWithDefaults(q *protocol.Queue) {
	if q.Limit == 0 {
		return
	}
	if q.Timeout == 0 {
		q.Timeout = protocol.Duration(DefaultQueueTimeout)
	}
	if q.Order == "" {
		q.Order = protocol.QueueFIFO
	}
}

// validateQueue checks g.Queue after WithDefaults.
func validateQueue(g protocol.Group) error {
	q := g.Queue
	fe := func(field string, v any, allowed string) error {
		return &protocol.FieldError{Field: "queue." + field, Value: v, Allowed: allowed}
	}
	if q.Limit < 0 || q.Limit > MaxQueueLimit {
		return fe("limit", q.Limit, fmt.Sprintf("must be in [0,%d] (0: no queue)", MaxQueueLimit))
	}
	if q.Limit == 0 {
		if q != (protocol.Queue{}) {
			return fe("limit", q.Limit, "must be at least 1 when queue.timeout, queue.order or queue.lead is set")
		}
		return nil
	}
	if g.Protocol != protocol.ProtocolHTTP {
		return fe("limit", q.Limit, "must be 0 for protocol "+g.Protocol+": only http front doors queue calls")
	}
	if g.Binding != protocol.PerRequest {
		return fe("limit", q.Limit, "must be 0 with binding "+g.Binding+": only per-request front doors queue calls")
	}
	if g.MaxInflight == 0 {
		return fe("limit", q.Limit, "must be 0 unless max_inflight is set: calls wait for a replica below max_inflight")
	}
	if err := durationIn(q.Timeout, time.Millisecond, time.Hour); err != "" {
		return fe("timeout", q.Timeout.String(), err)
	}
	switch q.Order {
	case protocol.QueueFIFO, protocol.QueueCost:
	default:
		return fe("order", q.Order, "must be one of: fifo, cost")
	}
	if q.Lead != 0 {
		if err := durationIn(q.Lead, 0, MaxQueueLead); err != "" {
			return fe("lead", q.Lead.String(), err)
		}
	}
	return nil
}
