package protocol

// Monitor modes.
const (
	MonitorPush = "push"
	MonitorPull = "pull"
)

// MonitorSpec says how the balancer learns a replica's load.
type MonitorSpec struct {
	// Mode is "push" (the monitor POSTs reports) or "pull" (the balancer
	// GETs URL). Default push.
	Mode string `json:"mode,omitempty" yaml:"mode,omitempty"`
	// URL is the pull endpoint (pull mode only).
	URL string `json:"url,omitempty" yaml:"url,omitempty"`
	// Interval overrides the group's report interval for pulls.
	Interval Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
}

// Registration is the body of POST /v1/groups/{name}/replicas.
type Registration struct {
	// Address is the replica's base URL (HTTP), IOR or host:port.
	Address string `json:"address"`
	// Weight is the replica's relative capacity; default 1.
	Weight float64 `json:"weight,omitempty"`
	// Monitor says how its load reaches the balancer.
	Monitor MonitorSpec `json:"monitor,omitempty"`
	// Replace takes over an existing registration of the same address (a
	// monitor whose process restarted): same id, fresh token.
	Replace bool `json:"replace,omitempty"`
	// Worker, when set, makes this the registration of one worker of a
	// multi-process replica (see Worker).
	Worker *Worker `json:"worker,omitempty"`
}

// Registered is the answer to a registration.
type Registered struct {
	ID             string   `json:"id"`
	Token          string   `json:"token"`
	FrontDoor      string   `json:"front_door"`
	ReportURL      string   `json:"report_url"`
	ReportInterval Duration `json:"report_interval"`
}

// ZeroWeightAllowed is what a replica weight written as 0 is told. Decoded
// into a float64, a weight left out and a weight of 0 look the same, so the
// edges that can tell them apart (the API's JSON bodies, the config file,
// ctl's group files) reject an explicit 0 with this text before the
// server's validation sees the default of 1.
const ZeroWeightAllowed = "must be in (0, 1000000]; leave weight out for the default of 1"
