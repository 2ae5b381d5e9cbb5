package registry

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Orders in which a group's queue serves its waiting calls.
const (
	// QueueFIFO serves the longest-waiting call first.
	QueueFIFO = "fifo"
	// QueueCost serves the call of least cost first (the cpu part of its
	// Fulcrum-Cost header; a call without one counts as cost 0), which
	// minimises the mean response time when costs are known (shortest
	// job first); a call that has waited half the queue's timeout goes
	// before every younger one, so large calls are not starved.
	QueueCost = "cost"
)

// Defaults and bounds of a group's Queue.
const (
	DefaultQueueTimeout = time.Second
	MaxQueueLimit       = 1_000_000
	MaxQueueLead        = 10 * time.Second
)

// Queue lets a per-request HTTP group hold calls at the front door while
// every replica has max_inflight calls in flight, and hand each to the
// first replica with room, instead of answering 503 at once. Seed 004 §IV.B
// models servers that "execute maximum k tasks in parallel", the rest
// queued until one finishes; max_inflight is that k.
type Queue struct {
	// Limit is how many calls may wait at once; a call beyond it is
	// answered 503 overloaded. 0 (default) disables the queue.
	Limit int `json:"limit,omitempty" yaml:"limit,omitempty"`
	// Timeout bounds one call's wait; a call still waiting then is
	// answered 503 overloaded. Default 1s, range [1ms, 1h].
	Timeout protocol.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Order is fifo (default) or cost.
	Order string `json:"order,omitempty" yaml:"order,omitempty"`
	// Lead, when above 0, frees a call's max_inflight slot that long
	// before the call is expected to end, so that the next waiting call
	// reaches the replica as it finishes rather than a round trip later
	// (frontdoor.Pace). The expected end comes from the call's
	// Fulcrum-Cost and the replica's recent service times; calls without
	// a cost hold their slots to the end. About one round trip between
	// the front door and the replicas, plus the front door's own time per
	// call. Default 0 (off), range [0, 10s].
	Lead protocol.Duration `json:"lead,omitempty" yaml:"lead,omitempty"`
}

// Enabled reports whether calls may wait.
func (q Queue) Enabled() bool { return q.Limit > 0 }

func (q *Queue) withDefaults() {
	if q.Limit == 0 {
		return
	}
	if q.Timeout == 0 {
		q.Timeout = protocol.Duration(DefaultQueueTimeout)
	}
	if q.Order == "" {
		q.Order = QueueFIFO
	}
}

// validateQueue checks g.Queue after WithDefaults.
func (g Group) validateQueue() error {
	q := g.Queue
	fe := func(field string, v any, allowed string) error {
		return &protocol.FieldError{Field: "queue." + field, Value: v, Allowed: allowed}
	}
	if q.Limit < 0 || q.Limit > MaxQueueLimit {
		return fe("limit", q.Limit, fmt.Sprintf("must be in [0,%d] (0: no queue)", MaxQueueLimit))
	}
	if q.Limit == 0 {
		if q != (Queue{}) {
			return fe("limit", q.Limit, "must be at least 1 when queue.timeout, queue.order or queue.lead is set")
		}
		return nil
	}
	if g.Protocol != ProtocolHTTP {
		return fe("limit", q.Limit, "must be 0 for protocol "+g.Protocol+": only http front doors queue calls")
	}
	if g.Binding != PerRequest {
		return fe("limit", q.Limit, "must be 0 with binding "+g.Binding+": only per-request front doors queue calls")
	}
	if g.MaxInflight == 0 {
		return fe("limit", q.Limit, "must be 0 unless max_inflight is set: calls wait for a replica below max_inflight")
	}
	if err := durationIn(q.Timeout, time.Millisecond, time.Hour); err != "" {
		return fe("timeout", q.Timeout.String(), err)
	}
	switch q.Order {
	case QueueFIFO, QueueCost:
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
