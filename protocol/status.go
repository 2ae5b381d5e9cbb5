package protocol

// GroupStatus is a group's settings and live state: the body of
// GET /v1/groups/{name}.
type GroupStatus struct {
	Group
	// Listening is the address the front door is bound to.
	Listening string `json:"listening,omitempty"`
	// Reference is a GIOP group's object reference (corbaloc URL and
	// IOR); absent for other protocols.
	Reference *Reference `json:"reference,omitempty"`
	// Replicas are all members with their loads and counters.
	Replicas []ReplicaStatus `json:"replicas"`
	// Blocked are the addresses the group refuses to register until they
	// are unblocked (fulcrum ctl remove --block), sorted.
	Blocked []string `json:"blocked,omitempty"`
	// Warning is set when a change to a config-declared group will be
	// reverted at the next start or reload.
	Warning string `json:"warning,omitempty"`
	// StrategyAlerts counts the alerts the group's strategies raised (albl:
	// no replica up for three periods); each is also logged and sent as an
	// "alert" event.
	StrategyAlerts uint64 `json:"strategy_alerts,omitempty"`
	// QueueStats are the queue's calls waiting and counters, when the
	// group has a queue (queue.limit > 0).
	QueueStats *QueueStats `json:"queue_stats,omitempty"`
	// Revision is the store revision at which the group's settings were
	// last written (its ETag, "<revision>"); replica registrations and
	// load reports do not change it. See If-Match in docs/api.md.
	Revision int64 `json:"revision,omitempty"`
}

// ReplicaStatus is one replica's live state.
type ReplicaStatus struct {
	ID      string  `json:"id"`
	Address string  `json:"address"`
	State   string  `json:"state"`
	Weight  float64 `json:"weight"`
	Static  bool    `json:"static,omitempty"`
	Monitor string  `json:"monitor"`
	// Load is the last reported sample; null when unreported.
	Load *float64 `json:"load"`
	// EffectiveLoad is the analyzer's dampened load; null when unreported.
	EffectiveLoad *float64           `json:"effective_load"`
	Metrics       map[string]float64 `json:"metrics,omitempty"`
	Advisory      string             `json:"advisory"`
	Shed          float64            `json:"shed"`
	Epoch         uint64             `json:"epoch"`
	// ReportAgeMS is the age of the last report; null when never reported.
	ReportAgeMS *int64         `json:"report_age_ms"`
	Inflight    int64          `json:"inflight"`
	Counters    CountersStatus `json:"counters"`
	// Applied is, in a replicated group, the log position the replica's
	// agent last reported to this instance as applied (absent before its
	// first report, about a second after it starts, and in other groups).
	Applied uint64 `json:"applied,omitempty"`
	// Source says where RPS, the latency quantiles and BoundClients come
	// from: SourceFrontDoor (per-request, replicated and tcp groups: the
	// calls the front door proxied over its last StatsWindow) or
	// SourceReport (on-demand and per-session groups: the replica's last
	// fresh report, since bound calls never pass the front door).
	Source string `json:"source"`
	// RPS is calls/s (tcp groups: connections/s); null when unknown (no
	// fresh report, or a report without rps).
	RPS *float64 `json:"rps"`
	// LatencyP50MS and LatencyP99MS are the median and 99th percentile
	// latency in ms; null when unknown (no answered call in the front
	// door's window, no such metric in the report, and always in tcp
	// groups: the tcp front door does not see calls).
	LatencyP50MS *float64 `json:"latency_p50_ms"`
	LatencyP99MS *float64 `json:"latency_p99_ms"`
	// BoundClients is the number of clients bound to the replica now, as
	// its report's bound_clients says; null in front-door groups and when
	// the report has none.
	BoundClients *int64 `json:"bound_clients"`
	// Ejections counts the passive ejections of the replica by this
	// instance since it joined; null when passive ejection is off
	// (health.passive.consecutive_failures < 0).
	Ejections *uint64 `json:"ejections"`
	// Workers is set for a multi-process replica (registered with a
	// Worker): its worker count and how many of its workers reported
	// recently.
	Workers *WorkersStatus `json:"workers,omitempty"`
}

// WorkersStatus are the workers of a multi-process replica.
type WorkersStatus struct {
	// Count is the worker count the replica registered with.
	Count int `json:"count"`
	// Reporting is how many workers' last report is recent enough to be
	// combined into the replica's (younger than 3 report intervals).
	Reporting int `json:"reporting"`
}

// Where a ReplicaStatus's rates and latencies come from (its Source).
const (
	SourceFrontDoor = "frontdoor"
	SourceReport    = "report"
)

// CountersStatus are a replica's cumulative counters.
type CountersStatus struct {
	Bindings   uint64 `json:"bindings"`
	Rebinds    uint64 `json:"rebinds"`
	Proxied    uint64 `json:"proxied"`
	Redirected uint64 `json:"redirected"`
	Failures   uint64 `json:"failures"`
}

// GroupPatch is the body of PATCH /v1/groups/{name}: run-time changes.
type GroupPatch struct {
	Strategy *string        `json:"strategy,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
	Binding  *string        `json:"binding,omitempty"`
	// MaxInflight and Queue replace the group's max_inflight and queue
	// (a queue given whole; {} turns it off). Calls waiting in a queue
	// turned off are answered 503.
	MaxInflight *int   `json:"max_inflight,omitempty"`
	Queue       *Queue `json:"queue,omitempty"`
}
