package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func tcpGroup() protocol.Group {
	return protocol.Group{
		Name: "echo", Protocol: protocol.ProtocolTCP, FrontDoor: "127.0.0.1:7000",
		Replicas: []protocol.StaticReplica{{Address: "10.0.0.5:7000"}, {Address: "10.0.0.6:7000"}},
	}
}

// A tcp group's defaults: binding per-request, drain_timeout 30s; it
// validates, and so does each strategy that applies per connection.
func TestTCPGroupDefaults(t *testing.T) {
	t.Parallel()
	g := WithDefaults(tcpGroup())
	if g.Binding != protocol.PerRequest || g.TCP.DrainTimeout != DefaultTCPDrainTimeout || g.Advertise != "127.0.0.1:7000" {
		t.Errorf("defaults: binding %q, drain_timeout %v, advertise %q", g.Binding, g.TCP.DrainTimeout, g.Advertise)
	}
	if err := Validate(g); err != nil {
		t.Fatal(err)
	}
	for _, s := range TCPStrategies {
		g := tcpGroup()
		g.Strategy = s
		if err := Validate(WithDefaults(g)); err != nil {
			t.Errorf("strategy %s: %v", s, err)
		}
	}
	ok := tcpGroup()
	ok.Strategy = "consistent-hash"
	ok.Params = map[string]any{"key": "client-address"}
	ok.Health = protocol.Health{Send: "PING\r\n", Expect: "+PONG"}
	ok.MaxInflight = 100
	ok.TCP = protocol.TCP{MaxConnections: 5000, MaxConnectionAge: protocol.Duration(time.Minute), DrainTimeout: protocol.Duration(time.Second),
		ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32"}, Send: "v2"}}
	if err := Validate(WithDefaults(ok)); err != nil {
		t.Errorf("a tcp group with every setting: %v", err)
	}
}

// Each rule of a tcp group refuses with a FieldError naming the field.
func TestTCPGroupRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		base   func() protocol.Group
		mutate func(*protocol.Group)
		field  string
		want   string
	}{
		{"on-demand", tcpGroup, func(g *protocol.Group) { g.Binding = protocol.OnDemand }, "binding", "must be per-request"},
		{"replicated", tcpGroup, func(g *protocol.Group) { g.Binding = protocol.BindingReplicated }, "binding", "only allowed with protocol http or giop"},
		{"per-call strategy", tcpGroup, func(g *protocol.Group) { g.Strategy = "peak-ewma" }, "strategy",
			"apply per connection: round-robin, random, weighted-round-robin, least-connections, weighted-least-connections, shortest-expected-delay, never-queue, power-of-two, consistent-hash, least-loaded"},
		{"hash by header", tcpGroup, func(g *protocol.Group) {
			g.Strategy, g.Params = "consistent-hash", map[string]any{"key": "header:X-User"}
		}, "params.key", "must be client-address"},
		{"url replica", tcpGroup, func(g *protocol.Group) { g.Replicas[0].Address = "http://10.0.0.5:7000" }, "replicas[0].address", "host:port"},
		{"health path", tcpGroup, func(g *protocol.Group) { g.Health.Path = "/healthz" }, "health.path", "must be empty for tcp groups"},
		{"send without expect", tcpGroup, func(g *protocol.Group) { g.Health.Send = "PING\n" }, "health.expect", "must be set with health.send"},
		{"queue", tcpGroup, func(g *protocol.Group) { g.Queue.Limit = 10 }, "queue", "not allowed with protocol tcp"},
		{"workflow", tcpGroup, func(g *protocol.Group) { g.Workflow.Parallel = 2 }, "workflow", "not allowed with protocol tcp"},
		{"front door tls", tcpGroup, func(g *protocol.Group) { g.TLS = protocol.FrontDoorTLS{Cert: "c.pem", Key: "k.pem"} }, "tls", "only allowed with protocol http"},
		{"replica tls", tcpGroup, func(g *protocol.Group) { g.ReplicaTLS.CA = "ca.pem" }, "replica_tls", "only allowed with protocol http"},
		{"giop block", tcpGroup, func(g *protocol.Group) { g.GIOP.Locate = protocol.LocateHere }, "giop", "only allowed with protocol giop"},
		{"max_connections negative", tcpGroup, func(g *protocol.Group) { g.TCP.MaxConnections = -1 }, "tcp.max_connections", "[0,10000000]"},
		{"max_connections huge", tcpGroup, func(g *protocol.Group) { g.TCP.MaxConnections = 20_000_000 }, "tcp.max_connections", "[0,10000000]"},
		{"max_connection_age", tcpGroup, func(g *protocol.Group) { g.TCP.MaxConnectionAge = protocol.Duration(8 * 24 * time.Hour) }, "tcp.max_connection_age", "0: never"},
		{"drain_timeout", tcpGroup, func(g *protocol.Group) { g.TCP.DrainTimeout = protocol.Duration(25 * time.Hour) }, "tcp.drain_timeout", "[0s, 24h0m0s]"},
		{"trusted", tcpGroup, func(g *protocol.Group) { g.TCP.ProxyProtocol.Trusted = []string{"10.0.0.0/8", "lb.example"} }, "tcp.proxy_protocol.trusted[1]", "CIDR"},
		{"trusted bad cidr", tcpGroup, func(g *protocol.Group) { g.TCP.ProxyProtocol.Trusted = []string{"10.0.0.0/33"} }, "tcp.proxy_protocol.trusted[0]", "CIDR"},
		{"send", tcpGroup, func(g *protocol.Group) { g.TCP.ProxyProtocol.Send = "v3" }, "tcp.proxy_protocol.send", "v1, v2"},
		{"tcp block on http", httpGroup, func(g *protocol.Group) { g.TCP.MaxConnections = 10 }, "tcp", "only allowed with protocol tcp"},
		{"send on http", httpGroup, func(g *protocol.Group) { g.Health.Send = "PING" }, "health.send", "only allowed with protocol tcp"},
		{"expect on http", httpGroup, func(g *protocol.Group) { g.Health.Expect = "PONG" }, "health.expect", "only allowed with protocol tcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := tt.base()
			tt.mutate(&g)
			var found *protocol.FieldError
			for _, err := range ValidateAll(WithDefaults(g)) {
				var fe *protocol.FieldError
				if errors.As(err, &fe) && fe.Field == tt.field {
					found = fe
					break
				}
			}
			if found == nil {
				t.Fatalf("ValidateAll = %v, want an error for field %q", ValidateAll(WithDefaults(g)), tt.field)
			}
			if !strings.Contains(found.Error(), tt.want) {
				t.Errorf("%s: %q, want it to mention %q", tt.field, found.Error(), tt.want)
			}
		})
	}
}

func httpGroup() protocol.Group {
	return protocol.Group{Name: "web", FrontDoor: "127.0.0.1:8000", Replicas: []protocol.StaticReplica{{Address: "http://10.0.0.5:9000"}}}
}
