package registry

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults and bounds of a tcp group's settings (Group.TCP; docs/tcp.md).
const (
	// DefaultTCPDrainTimeout is tcp.drain_timeout's default.
	DefaultTCPDrainTimeout = protocol.Duration(30 * time.Second)
	// MaxTCPDrainTimeout bounds tcp.drain_timeout.
	MaxTCPDrainTimeout = 24 * time.Hour
	// MaxTCPMaxConnections bounds tcp.max_connections.
	MaxTCPMaxConnections = 10_000_000
	// MaxTCPMaxConnectionAge bounds tcp.max_connection_age.
	MaxTCPMaxConnectionAge = 7 * 24 * time.Hour
	// MaxTCPTrusted bounds the entries of tcp.proxy_protocol.trusted.
	MaxTCPTrusted = 1024
)

// TCPStrategies are the strategies a tcp group may use: those that choose
// per connection from what the front door knows when it accepts one (the
// client's address, the replicas' open connections, weights and load
// reports). The others need what a TCP stream does not carry (a path, a
// call's cost, a request's latency) and are refused.
var TCPStrategies = []string{
	"round-robin", "random", "weighted-round-robin", "least-connections",
	"weighted-least-connections", "shortest-expected-delay", "never-queue",
	"power-of-two", "consistent-hash", "least-loaded",
}

// tcpWithDefaults fills a tcp group's defaults: binding per-request (its
// only binding) and tcp.drain_timeout. Other groups are left as they are.
func tcpWithDefaults(g *protocol.Group) {
	if g.Protocol != protocol.ProtocolTCP {
		return
	}
	if g.Binding == "" {
		g.Binding = protocol.PerRequest
	}
	if g.TCP.DrainTimeout == 0 {
		g.TCP.DrainTimeout = DefaultTCPDrainTimeout
	}
}

// validateTCP checks what is particular to tcp groups, and refuses a tcp
// block outside them; every problem, each a *protocol.FieldError.
func validateTCP(g protocol.Group) []error {
	var errs []error
	fe := func(field string, v any, allowed string) {
		errs = append(errs, &protocol.FieldError{Field: field, Value: v, Allowed: allowed})
	}
	if g.Protocol != protocol.ProtocolTCP {
		if !tcpBlockEmpty(g.TCP) {
			fe("tcp", "(a mapping)", "is only allowed with protocol tcp (the group's protocol is "+g.Protocol+")")
		}
		if g.Health.Send != "" {
			fe("health.send", g.Health.Send, "is only allowed with protocol tcp")
		}
		if g.Health.Expect != "" {
			fe("health.expect", g.Health.Expect, "is only allowed with protocol tcp")
		}
		return errs
	}
	if g.Binding != protocol.PerRequest {
		fe("binding", g.Binding, "must be per-request for protocol tcp (each connection is balanced)")
	}
	if _, known := strategy.Lookup(g.Strategy); known && !slices.Contains(TCPStrategies, g.Strategy) {
		fe("strategy", g.Strategy, "must be one of the strategies that apply per connection: "+strings.Join(TCPStrategies, ", "))
	} else if g.Strategy == "consistent-hash" {
		if k, ok := g.Params["key"]; ok && k != nil && k != "client-address" {
			fe("params.key", k, "consistent-hash: must be client-address in a tcp group (a TCP stream has no headers or cookies)")
		}
	}
	if g.Health.Path != "" {
		fe("health.path", g.Health.Path, "must be empty for tcp groups (they probe with a TCP connect, or health.send and health.expect)")
	}
	if g.Health.Send != "" && g.Health.Expect == "" {
		fe("health.expect", g.Health.Expect, "must be set with health.send (the bytes the replica's answer must contain)")
	}
	if g.Queue != (protocol.Queue{}) {
		fe("queue", "(a mapping)", "is not allowed with protocol tcp (a connection beyond the limits is refused at once)")
	}
	if g.Workflow != (protocol.WorkflowSettings{}) {
		fe("workflow", "(a mapping)", "is not allowed with protocol tcp (work-flows are HTTP calls)")
	}
	t := g.TCP
	if t.MaxConnections < 0 || t.MaxConnections > MaxTCPMaxConnections {
		fe("tcp.max_connections", t.MaxConnections, fmt.Sprintf("must be in [0,%d] (0: derived from the descriptor limit)", MaxTCPMaxConnections))
	}
	if err := durationIn(t.MaxConnectionAge, 0, MaxTCPMaxConnectionAge); err != "" {
		fe("tcp.max_connection_age", t.MaxConnectionAge.String(), err+" (0: never)")
	}
	if err := durationIn(t.DrainTimeout, 0, MaxTCPDrainTimeout); err != "" {
		fe("tcp.drain_timeout", t.DrainTimeout.String(), err)
	}
	if len(t.ProxyProtocol.Trusted) > MaxTCPTrusted {
		fe("tcp.proxy_protocol.trusted", len(t.ProxyProtocol.Trusted), fmt.Sprintf("must have at most %d entries", MaxTCPTrusted))
	}
	for i, s := range t.ProxyProtocol.Trusted {
		if !validTrusted(s) {
			fe(fmt.Sprintf("tcp.proxy_protocol.trusted[%d]", i), s, "must be a CIDR (10.0.0.0/8) or an IP address (10.0.0.7)")
		}
	}
	switch t.ProxyProtocol.Send {
	case "", "v1", "v2":
	default:
		fe("tcp.proxy_protocol.send", t.ProxyProtocol.Send, `must be one of: "" (none), v1, v2`)
	}
	return errs
}

// tcpBlockEmpty reports whether a group's tcp block sets nothing.
func tcpBlockEmpty(t protocol.TCP) bool {
	return t.MaxConnections == 0 && t.MaxConnectionAge == 0 && t.DrainTimeout == 0 &&
		len(t.ProxyProtocol.Trusted) == 0 && t.ProxyProtocol.Send == ""
}

// validTrusted tells a CIDR or a single IP address (without a zone).
func validTrusted(s string) bool {
	if strings.Contains(s, "/") {
		_, err := netip.ParsePrefix(s)
		return err == nil
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}
