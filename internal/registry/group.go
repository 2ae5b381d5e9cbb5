package registry

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

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

// Defaults of a group's settings.
const (
	DefaultProtocol       = ProtocolHTTP
	DefaultBinding        = OnDemand
	DefaultStrategy       = "least-loaded"
	DefaultReportInterval = protocol.Duration(500 * time.Millisecond)
	DefaultRetry          = RetryUnsent
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

// Defaults of a group's Timeouts.
const (
	DefaultConnectTimeout = 2 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
)

// Sources of a group's definition.
const (
	SourceConfig = "config"
	SourceAPI    = "api"
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Group is a group's settings: the keys of a group in the config file, and
// the body of PUT /v1/groups/{name}.
type Group struct {
	// Name matches [a-z0-9-]+ (at most 63 characters).
	Name string `json:"name" yaml:"name"`
	// Protocol is http (default), giop or tcp.
	Protocol string `json:"protocol,omitempty" yaml:"protocol,omitempty"`
	// FrontDoor is the host:port the group's front door listens on.
	FrontDoor string `json:"front_door" yaml:"front_door"`
	// Advertise is the front door URL clients and monitors use; default
	// derived from FrontDoor.
	Advertise string `json:"advertise,omitempty" yaml:"advertise,omitempty"`
	// Binding is per-session, on-demand (default) or per-request.
	Binding string `json:"binding,omitempty" yaml:"binding,omitempty"`
	// Strategy is a registered strategy name; default least-loaded.
	Strategy string `json:"strategy,omitempty" yaml:"strategy,omitempty"`
	// Params are the strategy's parameters; missing ones take defaults.
	Params map[string]any `json:"params,omitempty" yaml:"params,omitempty"`
	// ReportInterval is how often monitors report; default 500ms, range
	// [10ms, 1h].
	ReportInterval protocol.Duration `json:"report_interval,omitempty" yaml:"report_interval,omitempty"`
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
	// JoinToken lets replicas register without the admin token.
	JoinToken string `json:"join_token,omitempty" yaml:"join_token,omitempty"`
	// Replicas are static members.
	Replicas []StaticReplica `json:"replicas,omitempty" yaml:"replicas,omitempty"`
	// Source is where the group was defined: config or api. Read-only.
	Source string `json:"source,omitempty" yaml:"-"`
}

// StaticReplica is a member declared with its group.
type StaticReplica struct {
	Address string               `json:"address" yaml:"address"`
	Weight  float64              `json:"weight,omitempty" yaml:"weight,omitempty"`
	Monitor protocol.MonitorSpec `json:"monitor,omitempty" yaml:"monitor,omitempty"`
}

// Health configures a group's health checking. An empty Path disables
// active probes of HTTP groups; GIOP groups always probe, with a
// LocateRequest for each replica's object key.
type Health struct {
	// Path is probed with GET (HTTP groups); empty disables active probes.
	// GIOP groups must leave it empty.
	Path string `json:"path,omitempty" yaml:"path,omitempty"`
	// Interval between probes; default 1s.
	Interval protocol.Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
	// Timeout of one probe; default 500ms, must be below Interval.
	Timeout protocol.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Rise successes mark a down replica up; default 2.
	Rise int `json:"rise,omitempty" yaml:"rise,omitempty"`
	// Fall failures mark an up replica down; default 3.
	Fall int `json:"fall,omitempty" yaml:"fall,omitempty"`
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
	BaseEjection protocol.Duration `json:"base_ejection,omitempty" yaml:"base_ejection,omitempty"`
	// MaxEjectedPercent caps the share of the group ejected at once;
	// default 50 (0 means the default), range [1,100].
	MaxEjectedPercent int `json:"max_ejected_percent,omitempty" yaml:"max_ejected_percent,omitempty"`
}

// Timeouts bound the front door's connections.
type Timeouts struct {
	// Connect bounds dialling a replica; default 2s.
	Connect protocol.Duration `json:"connect,omitempty" yaml:"connect,omitempty"`
	// Request bounds reading a request's headers and a whole proxied call;
	// default 30s.
	Request protocol.Duration `json:"request,omitempty" yaml:"request,omitempty"`
	// Idle bounds an idle keep-alive connection; default 90s.
	Idle protocol.Duration `json:"idle,omitempty" yaml:"idle,omitempty"`
}

// WithDefaults returns g with every unset setting at its default. Params
// are completed with the strategy's defaults.
func (g Group) WithDefaults() Group {
	if g.Protocol == "" {
		g.Protocol = DefaultProtocol
	}
	if g.Binding == "" {
		g.Binding = DefaultBinding
	}
	if g.Strategy == "" {
		g.Strategy = DefaultStrategy
	}
	if g.ReportInterval == 0 {
		g.ReportInterval = DefaultReportInterval
	}
	h := &g.Health
	if h.Interval == 0 {
		h.Interval = protocol.Duration(time.Second)
	}
	if h.Timeout == 0 {
		h.Timeout = protocol.Duration(500 * time.Millisecond)
	}
	if h.Rise == 0 {
		h.Rise = 2
	}
	if h.Fall == 0 {
		h.Fall = 3
	}
	if h.Passive.ConsecutiveFailures == 0 {
		h.Passive.ConsecutiveFailures = 5
	}
	if h.Passive.BaseEjection == 0 {
		h.Passive.BaseEjection = protocol.Duration(30 * time.Second)
	}
	if h.Passive.MaxEjectedPercent == 0 {
		h.Passive.MaxEjectedPercent = 50
	}
	t := &g.Timeouts
	if t.Connect == 0 {
		t.Connect = protocol.Duration(DefaultConnectTimeout)
	}
	if t.Request == 0 {
		t.Request = protocol.Duration(DefaultRequestTimeout)
	}
	if t.Idle == 0 {
		t.Idle = protocol.Duration(DefaultIdleTimeout)
	}
	if d, ok := strategy.Lookup(g.Strategy); ok {
		merged := d.Defaults()
		for k, v := range g.Params {
			merged[k] = v
		}
		g.Params = merged
	}
	for i := range g.Replicas {
		if g.Replicas[i].Weight == 0 {
			g.Replicas[i].Weight = 1
		}
	}
	if g.Advertise == "" && g.FrontDoor != "" {
		g.Advertise = AdvertiseFor(g.Protocol, g.FrontDoor)
	}
	if g.Protocol == ProtocolGIOP {
		g.GIOP.withDefaults()
	}
	g.Queue.withDefaults()
	if g.Retry == "" {
		g.Retry = DefaultRetry
	}
	return g
}

// AdvertiseFor derives the public URL of a front door listening on addr.
// A wildcard host becomes 127.0.0.1.
func AdvertiseFor(proto, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	hp := net.JoinHostPort(host, port)
	switch proto {
	case ProtocolGIOP:
		return "corbaloc:iiop:" + hp
	case ProtocolTCP:
		return hp
	default:
		return "http://" + hp
	}
}

// Validate checks a group after WithDefaults. Errors are
// *protocol.FieldError naming the field as in the config file.
func (g Group) Validate() error {
	fe := func(field string, v any, allowed string) error {
		return &protocol.FieldError{Field: field, Value: v, Allowed: allowed}
	}
	if !nameRE.MatchString(g.Name) {
		return fe("name", g.Name, "must match [a-z0-9-]+, 1 to 63 characters, not starting or ending with '-'")
	}
	switch g.Protocol {
	case ProtocolHTTP, ProtocolGIOP, ProtocolTCP:
	default:
		return fe("protocol", g.Protocol, "must be one of: http, giop, tcp")
	}
	if g.Protocol == ProtocolTCP {
		return fe("protocol", g.Protocol, "only http and giop front doors are available in this build")
	}
	if err := validHostPort(g.FrontDoor); err != nil {
		return fe("front_door", g.FrontDoor, "must be host:port with a port in 0-65535, 0 meaning any free port ("+err.Error()+")")
	}
	switch g.Binding {
	case PerSession, OnDemand, PerRequest:
	default:
		return fe("binding", g.Binding, "must be one of: per-session, on-demand, per-request")
	}
	if _, ok := strategy.Lookup(g.Strategy); !ok {
		return fe("strategy", g.Strategy, "must be one of: "+strings.Join(strategy.Names(), ", "))
	}
	if _, err := strategy.New(g.Strategy, g.Params, strategy.Env{}); err != nil {
		if pe, ok := err.(*strategy.ParamError); ok {
			return fe("params."+pe.Field, pe.Value, pe.Strategy+": "+pe.Allowed)
		}
		return fe("params", g.Params, err.Error())
	}
	if err := durationIn(g.ReportInterval, 10*time.Millisecond, time.Hour); err != "" {
		return fe("report_interval", g.ReportInterval.String(), err)
	}
	if g.Advertise != "" && g.Protocol == ProtocolHTTP && !strings.HasPrefix(g.Advertise, "http://") && !strings.HasPrefix(g.Advertise, "https://") {
		return fe("advertise", g.Advertise, "must be an http:// or https:// URL")
	}
	if err := g.validateGIOP(); err != nil {
		return err
	}
	h := g.Health
	if h.Path != "" && g.Protocol == ProtocolGIOP {
		return fe("health.path", h.Path, "must be empty for giop groups (they probe with a GIOP LocateRequest)")
	}
	if h.Path != "" && !strings.HasPrefix(h.Path, "/") {
		return fe("health.path", h.Path, "must start with '/'")
	}
	if err := durationIn(h.Interval, 10*time.Millisecond, time.Hour); err != "" {
		return fe("health.interval", h.Interval.String(), err)
	}
	if err := durationIn(h.Timeout, time.Millisecond, h.Interval.D()); err != "" {
		return fe("health.timeout", h.Timeout.String(), err+" (at most health.interval)")
	}
	if h.Rise < 1 || h.Rise > 100 {
		return fe("health.rise", h.Rise, "must be in [1,100]")
	}
	if h.Fall < 1 || h.Fall > 100 {
		return fe("health.fall", h.Fall, "must be in [1,100]")
	}
	if h.Passive.ConsecutiveFailures < -1 || h.Passive.ConsecutiveFailures > 10000 {
		return fe("health.passive.consecutive_failures", h.Passive.ConsecutiveFailures, "must be in [1,10000], or -1 to disable")
	}
	if err := durationIn(h.Passive.BaseEjection, time.Millisecond, 24*time.Hour); err != "" {
		return fe("health.passive.base_ejection", h.Passive.BaseEjection.String(), err)
	}
	if h.Passive.MaxEjectedPercent < 0 || h.Passive.MaxEjectedPercent > 100 {
		return fe("health.passive.max_ejected_percent", h.Passive.MaxEjectedPercent, "must be in [0,100]")
	}
	for _, d := range []struct {
		name string
		v    protocol.Duration
	}{{"timeouts.connect", g.Timeouts.Connect}, {"timeouts.request", g.Timeouts.Request}, {"timeouts.idle", g.Timeouts.Idle}} {
		if err := durationIn(d.v, time.Millisecond, 24*time.Hour); err != "" {
			return fe(d.name, d.v.String(), err)
		}
	}
	if g.MaxInflight < 0 || g.MaxInflight > 1_000_000 {
		return fe("max_inflight", g.MaxInflight, "must be in [0,1000000] (0: no limit)")
	}
	if err := g.validateQueue(); err != nil {
		return err
	}
	switch g.Retry {
	case "", RetryUnsent, RetryIdempotent:
	default:
		return fe("retry", g.Retry, "must be one of: "+RetryUnsent+", "+RetryIdempotent)
	}
	seen := map[string]int{}
	for i, r := range g.Replicas {
		field := fmt.Sprintf("replicas[%d]", i)
		if err := ValidateAddress(g.Protocol, r.Address); err != nil {
			return fe(field+".address", r.Address, err.Error())
		}
		if j, dup := seen[NormalizeAddress(r.Address)]; dup {
			return fe(field+".address", r.Address, fmt.Sprintf("must be unique in the group (also replicas[%d])", j))
		}
		seen[NormalizeAddress(r.Address)] = i
		if err := ValidateWeight(r.Weight); err != nil {
			return fe(field+".weight", r.Weight, err.Error())
		}
		if err := ValidateMonitor(r.Monitor); err != nil {
			e := err.(*protocol.FieldError)
			e.Field = field + "." + e.Field
			return e
		}
	}
	return nil
}

func durationIn(d protocol.Duration, lo, hi time.Duration) string {
	if d.D() < lo || d.D() > hi {
		return fmt.Sprintf("must be a duration in [%s, %s]", lo, hi)
	}
	return ""
}

func validHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q out of range", port)
	}
	return nil
}
