package protocol

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

// Queue lets a per-request HTTP group hold calls at the front door while
// every replica has max_inflight calls in flight, and hand each to the
// first replica with room, instead of answering 503 at once. The .NET Remoting paper §IV.B
// models servers that "execute maximum k tasks in parallel", the rest
// queued until one finishes; max_inflight is that k.
type Queue struct {
	// Limit is how many calls may wait at once; a call beyond it is
	// answered 503 overloaded. 0 (default) disables the queue.
	Limit int `json:"limit,omitempty" yaml:"limit,omitempty"`
	// Timeout bounds one call's wait; a call still waiting then is
	// answered 503 overloaded. Default 1s, range [1ms, 1h].
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
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
	Lead Duration `json:"lead,omitempty" yaml:"lead,omitempty"`
}

// Enabled reports whether calls may wait.
func (q Queue) Enabled() bool { return q.Limit > 0 }

// QueueStats are a queue's gauge and counters.
type QueueStats struct {
	// Waiting is the number of calls waiting now.
	Waiting int `json:"waiting"`
	// Served counts calls that got a member after waiting.
	Served uint64 `json:"served"`
	// Full counts calls refused because the queue was full.
	Full uint64 `json:"full"`
	// TimedOut counts calls that waited out the timeout (or lost their
	// client).
	TimedOut uint64 `json:"timed_out"`
	// Early counts slots freed ahead of their call's expected end
	// (queue.lead).
	Early uint64 `json:"early"`
	// WaitSeconds is the time the served calls waited, summed: their
	// mean wait is WaitSeconds / Served.
	WaitSeconds float64 `json:"wait_seconds"`
	// WaitCounts counts the served calls by how long they waited: the
	// i-th those that waited at most frontdoor.QueueWaitBounds[i] and
	// more than the bound before, the last those that waited longer than
	// every bound.
	WaitCounts []uint64 `json:"-"`
}
