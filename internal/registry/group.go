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

// Defaults of a group's settings.
const (
	DefaultProtocol       = protocol.ProtocolHTTP
	DefaultBinding        = protocol.OnDemand
	DefaultStrategy       = "least-loaded"
	DefaultReportInterval = protocol.Duration(500 * time.Millisecond)
	DefaultRetry          = protocol.RetryUnsent
)

// Defaults of a group's Timeouts.
const (
	DefaultConnectTimeout = 2 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidName tells whether name is a valid group name.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// WithDefaults returns g with every unset setting at its default. Params
// are completed with the strategy's defaults.
func WithDefaults(g protocol.Group) protocol.Group {
	if g.Protocol == "" {
		g.Protocol = DefaultProtocol
	}
	tcpWithDefaults(&g) // tcp.go: binding per-request, drain_timeout
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
		g.Advertise = GroupAdvertise(g, g.FrontDoor)
	}
	if g.Protocol == protocol.ProtocolGIOP {
		giopWithDefaults(&g.GIOP)
	}
	queueWithDefaults(&g.Queue)
	replicatedWithDefaults(&g)
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
	case protocol.ProtocolGIOP:
		return "corbaloc:iiop:" + hp
	case protocol.ProtocolTCP:
		return hp
	default:
		return "http://" + hp
	}
}

// Validate checks a group after WithDefaults. The error is the first of
// ValidateAll's, a *protocol.FieldError naming the field as in the config
// file.
func Validate(g protocol.Group) error {
	if errs := ValidateAll(g); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// ValidateAll checks a group after WithDefaults and returns every problem,
// each a *protocol.FieldError naming the field as in the config file, in
// the order of the checks. A check that depends on a value found wrong is
// skipped: an unknown protocol ends the checks, an unknown strategy skips
// its params, a wrong health.interval the health.timeout.
func ValidateAll(g protocol.Group) []error {
	var errs []error
	fe := func(field string, v any, allowed string) {
		errs = append(errs, &protocol.FieldError{Field: field, Value: v, Allowed: allowed})
	}
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if !nameRE.MatchString(g.Name) {
		fe("name", g.Name, "must match [a-z0-9-]+, 1 to 63 characters, not starting or ending with '-'")
	}
	switch g.Protocol {
	case protocol.ProtocolHTTP, protocol.ProtocolGIOP, protocol.ProtocolTCP:
	default:
		fe("protocol", g.Protocol, "must be one of: http, giop, tcp")
		return errs
	}
	if g.Protocol == protocol.ProtocolTCP && IsReplicated(g) {
		fe("binding", g.Binding, "replicated is only allowed with protocol http or giop (the group's protocol is tcp)")
		return errs
	}
	if err := validHostPort(g.FrontDoor); err != nil {
		fe("front_door", g.FrontDoor, "must be host:port with a port in 0-65535, 0 meaning any free port ("+err.Error()+")")
	}
	switch g.Binding {
	case protocol.PerSession, protocol.OnDemand, protocol.PerRequest, protocol.BindingReplicated:
	default:
		fe("binding", g.Binding, "must be one of: per-session, on-demand, per-request, replicated")
	}
	errs = append(errs, validateReplicated(g)...)
	errs = append(errs, validateTCP(g)...) // tcp.go
	if _, ok := strategy.Lookup(g.Strategy); !ok {
		fe("strategy", g.Strategy, "must be one of: "+strings.Join(strategy.Names(), ", "))
	} else if _, err := strategy.New(g.Strategy, g.Params, strategy.Env{}); err != nil {
		pe, isParam := err.(*strategy.ParamError)
		switch {
		case isParam && pe.Unknown:
			errs = append(errs, &protocol.FieldError{Field: "params." + pe.Field, Unknown: true, Allowed: pe.Allowed})
		case isParam:
			fe("params."+pe.Field, pe.Value, pe.Strategy+": "+pe.Allowed)
		default:
			fe("params", g.Params, err.Error())
		}
	}
	if err := durationIn(g.ReportInterval, 10*time.Millisecond, time.Hour); err != "" {
		fe("report_interval", g.ReportInterval.String(), err)
	}
	if g.Advertise != "" && g.Protocol == protocol.ProtocolHTTP && !strings.HasPrefix(g.Advertise, "http://") && !strings.HasPrefix(g.Advertise, "https://") {
		fe("advertise", g.Advertise, "must be an http:// or https:// URL")
	}
	add(validateGIOP(g))
	add(validateReplicaTLS(g))
	add(validateFrontDoorTLS(g))
	add(validateWorkflow(g))
	add(validateAffinity(g))
	h := g.Health
	if h.Path != "" && g.Protocol == protocol.ProtocolGIOP && IsReplicated(g) {
		fe("health.path", h.Path, "must be empty for replicated giop groups (their agents are probed at "+protocol.ReplicationHealthzPath+")")
	} else if h.Path != "" && g.Protocol == protocol.ProtocolGIOP {
		fe("health.path", h.Path, "must be empty for giop groups (they probe with a GIOP LocateRequest)")
	} else if h.Path != "" && g.Protocol != protocol.ProtocolTCP && !strings.HasPrefix(h.Path, "/") {
		fe("health.path", h.Path, "must start with '/'")
	}
	if err := durationIn(h.Interval, 10*time.Millisecond, time.Hour); err != "" {
		fe("health.interval", h.Interval.String(), err)
	} else if err := durationIn(h.Timeout, time.Millisecond, h.Interval.D()); err != "" {
		fe("health.timeout", h.Timeout.String(), err+" (at most health.interval)")
	}
	if h.Rise < 1 || h.Rise > 100 {
		fe("health.rise", h.Rise, "must be in [1,100]")
	}
	if h.Fall < 1 || h.Fall > 100 {
		fe("health.fall", h.Fall, "must be in [1,100]")
	}
	if h.Passive.ConsecutiveFailures < -1 || h.Passive.ConsecutiveFailures > 10000 {
		fe("health.passive.consecutive_failures", h.Passive.ConsecutiveFailures, "must be in [1,10000], or -1 to disable")
	}
	if err := durationIn(h.Passive.BaseEjection, time.Millisecond, 24*time.Hour); err != "" {
		fe("health.passive.base_ejection", h.Passive.BaseEjection.String(), err)
	}
	if h.Passive.MaxEjectedPercent < 0 || h.Passive.MaxEjectedPercent > 100 {
		fe("health.passive.max_ejected_percent", h.Passive.MaxEjectedPercent, "must be in [0,100]")
	}
	for _, d := range []struct {
		name string
		v    protocol.Duration
	}{{"timeouts.connect", g.Timeouts.Connect}, {"timeouts.request", g.Timeouts.Request}, {"timeouts.idle", g.Timeouts.Idle}} {
		if err := durationIn(d.v, time.Millisecond, 24*time.Hour); err != "" {
			fe(d.name, d.v.String(), err)
		}
	}
	if g.MaxInflight < 0 || g.MaxInflight > 1_000_000 {
		fe("max_inflight", g.MaxInflight, "must be in [0,1000000] (0: no limit)")
	}
	add(validateQueue(g))
	switch g.Retry {
	case "", protocol.RetryUnsent, protocol.RetryIdempotent:
	default:
		fe("retry", g.Retry, "must be one of: "+protocol.RetryUnsent+", "+protocol.RetryIdempotent)
	}
	seen := map[string]int{}
	for i, r := range g.Replicas {
		field := fmt.Sprintf("replicas[%d]", i)
		if err := ValidateGroupAddress(g, r.Address); err != nil {
			fe(field+".address", r.Address, err.Error())
		} else if j, dup := seen[NormalizeAddress(r.Address)]; dup {
			fe(field+".address", r.Address, fmt.Sprintf("must be unique in the group (also replicas[%d])", j))
		} else {
			seen[NormalizeAddress(r.Address)] = i
		}
		if err := ValidateWeight(r.Weight); err != nil {
			fe(field+".weight", r.Weight, err.Error())
		}
		if err := ValidateMonitor(r.Monitor); err != nil {
			e := err.(*protocol.FieldError)
			e.Field = field + "." + e.Field
			errs = append(errs, e)
		}
	}
	return errs
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
