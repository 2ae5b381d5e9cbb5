package protocol

// Protocols a group may speak.
const (
	ProtocolHTTP = "http"
	ProtocolGIOP = "giop"
	ProtocolTCP  = "tcp"
)

// Binding modes.
const (
	PerSession = "per-session"
	OnDemand   = "on-demand"
	PerRequest = "per-request"
)

// A group's retry settings (Group.Retry).
const (
	// RetryUnsent sends a call again only when it provably never reached
	// its replica.
	RetryUnsent = "unsent"
	// RetryIdempotent also sends again GET, HEAD and OPTIONS calls that
	// received no response byte.
	RetryIdempotent = "idempotent"
)

// Sources of a group's definition.
const (
	SourceConfig = "config"
	SourceAPI    = "api"
)

// Group is a group's settings: the keys of a group in the config file, and
// the body of PUT /v1/groups/{name}. Defaults and validation are the
// server's (internal/registry: WithDefaults, Validate); the documented
// defaults below are what it fills in.
type Group struct {
	// Name matches [a-z0-9-]+ (at most 63 characters).
	Name string `json:"name" yaml:"name"`
	// Protocol is http (default), giop or tcp.
	Protocol string `json:"protocol,omitempty" yaml:"protocol,omitempty"`
	// FrontDoor is the host:port the group's front door listens on.
	FrontDoor string `json:"front_door" yaml:"front_door"`
	// Advertise is the front door URL clients and monitors use; default
	// derived from FrontDoor (https:// when TLS is set).
	Advertise string `json:"advertise,omitempty" yaml:"advertise,omitempty"`
	// TLS terminates TLS on the front door (protocol http only;
	// frontdoor_tls.go); advertise then defaults to https://.
	TLS FrontDoorTLS `json:"tls,omitzero" yaml:"tls,omitempty"`
	// Binding is per-session, on-demand (default), per-request or
	// replicated (protocols http and giop; replication.go).
	Binding string `json:"binding,omitempty" yaml:"binding,omitempty"`
	// Strategy is a registered strategy name; default least-loaded.
	Strategy string `json:"strategy,omitempty" yaml:"strategy,omitempty"`
	// Params are the strategy's parameters; missing ones take defaults.
	Params map[string]any `json:"params,omitempty" yaml:"params,omitempty"`
	// ReportInterval is how often monitors report; default 500ms, range
	// [10ms, 1h].
	ReportInterval Duration `json:"report_interval,omitempty" yaml:"report_interval,omitempty"`
	// Health configures active probes and passive ejection.
	Health Health `json:"health,omitempty" yaml:"health,omitempty"`
	// Timeouts bound the front door's connections.
	Timeouts Timeouts `json:"timeouts,omitempty" yaml:"timeouts,omitempty"`
	// MaxInflight caps the calls the front door has in flight to one
	// replica in per-request mode (0: no cap).
	MaxInflight int `json:"max_inflight,omitempty" yaml:"max_inflight,omitempty"`
	// Queue holds calls while every replica is at MaxInflight (queue.go).
	Queue Queue `json:"queue,omitzero" yaml:"queue,omitempty"`
	// Retry says which proxied calls the front door sends again to another
	// replica after an attempt fails: unsent (default: only calls that
	// provably never reached their replica) or idempotent (also GET, HEAD
	// and OPTIONS calls that received no response byte; GIOP calls, which
	// have no methods, as unsent).
	Retry string `json:"retry,omitempty" yaml:"retry,omitempty"`
	// GIOP configures the GIOP front door (protocol giop only; giop.go).
	GIOP GIOP `json:"giop,omitzero" yaml:"giop,omitempty"`
	// ReplicaTLS verifies https:// replicas (replicatls.go).
	ReplicaTLS ReplicaTLS `json:"replica_tls,omitzero" yaml:"replica_tls,omitempty"`
	// Replicated configures a replicated group (binding replicated only;
	// replication.go).
	Replicated Replicated `json:"replicated,omitzero" yaml:"replicated,omitempty"`
	// TCP configures a tcp group's front door (protocol tcp only; tcp.go).
	TCP TCP `json:"tcp,omitzero" yaml:"tcp,omitempty"`
	// Affinity are the group's session-table rules (tcp groups and
	// per-request http groups; affinity.go).
	Affinity []AffinityRule `json:"affinity,omitempty" yaml:"affinity,omitempty"`
	// Workflow configures the group's work-flows (http groups;
	// workflow.go).
	Workflow WorkflowSettings `json:"workflow,omitzero" yaml:"workflow,omitempty"`
	// JoinToken lets replicas register without the admin token.
	JoinToken string `json:"join_token,omitempty" yaml:"join_token,omitempty"`
	// Replicas are static members.
	Replicas []StaticReplica `json:"replicas,omitempty" yaml:"replicas,omitempty"`
	// Source is where the group was defined: config or api. Read-only.
	Source string `json:"source,omitempty" yaml:"-"`
}

// StaticReplica is a member declared with its group.
type StaticReplica struct {
	Address string      `json:"address" yaml:"address"`
	Weight  float64     `json:"weight,omitempty" yaml:"weight,omitempty"`
	Monitor MonitorSpec `json:"monitor,omitempty" yaml:"monitor,omitempty"`
}

// Health configures a group's health checking. An empty Path disables
// active probes of HTTP groups; GIOP groups always probe, with a
// LocateRequest for each replica's object key.
type Health struct {
	// Path is probed with GET (HTTP groups); empty disables active probes.
	// GIOP groups must leave it empty.
	Path string `json:"path,omitempty" yaml:"path,omitempty"`
	// Interval between probes; default 1s.
	Interval Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
	// Timeout of one probe; default 500ms, must be below Interval.
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Rise successes mark a down replica up; default 2.
	Rise int `json:"rise,omitempty" yaml:"rise,omitempty"`
	// Fall failures mark an up replica down; default 3.
	Fall int `json:"fall,omitempty" yaml:"fall,omitempty"`
	// Send (tcp groups) is written to a replica on a fresh connection by
	// the active probe, which then reads until it has seen Expect; both
	// empty: a TCP connect is the probe.
	Send string `json:"send,omitempty" yaml:"send,omitempty"`
	// Expect (tcp groups) must appear in what the replica answers within
	// the probe's timeout.
	Expect string `json:"expect,omitempty" yaml:"expect,omitempty"`
	// Passive configures ejection on failed calls.
	Passive Passive `json:"passive,omitempty" yaml:"passive,omitempty"`
}

// Passive configures passive ejection (outlier detection).
type Passive struct {
	// ConsecutiveFailures (connection errors or 5xx) in a row that eject a
	// replica; default 5 (0 means the default); -1 disables passive
	// ejection. Only calls the front door proxies (per-request) count.
	ConsecutiveFailures int `json:"consecutive_failures,omitempty" yaml:"consecutive_failures,omitempty"`
	// BaseEjection is the first ejection's length, multiplied by the number
	// of ejections in a row; default 30s.
	BaseEjection Duration `json:"base_ejection,omitempty" yaml:"base_ejection,omitempty"`
	// MaxEjectedPercent caps the share of the group ejected at once;
	// default 50 (0 means the default), range [1,100].
	MaxEjectedPercent int `json:"max_ejected_percent,omitempty" yaml:"max_ejected_percent,omitempty"`
}

// Timeouts bound the front door's connections.
type Timeouts struct {
	// Connect bounds dialling a replica; default 2s.
	Connect Duration `json:"connect,omitempty" yaml:"connect,omitempty"`
	// Request bounds reading a request's headers and a whole proxied call;
	// default 30s.
	Request Duration `json:"request,omitempty" yaml:"request,omitempty"`
	// Idle bounds an idle keep-alive connection; default 90s.
	Idle Duration `json:"idle,omitempty" yaml:"idle,omitempty"`
}
