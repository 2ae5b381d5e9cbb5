package config

import (
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A tcp group with every key of docs/tcp.md parses, with its defaults.
func TestParseTCPGroup(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-connections")
	const file = `groups:
  - name: cache
    protocol: tcp
    front_door: 127.0.0.1:6379
    strategy: least-connections
    max_inflight: 2000
    timeouts: {connect: 1s, idle: 5m}
    health: {interval: 2s, timeout: 500ms, send: "PING\r\n", expect: "+PONG"}
    tcp:
      max_connections: 20000
      max_connection_age: 10m
      proxy_protocol:
        trusted: [10.0.0.0/24, 192.0.2.7]
        send: v2
    replicas:
      - address: 10.0.1.5:6379
`
	f, err := Parse("fulcrum.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Groups[0]
	want := protocol.TCP{MaxConnections: 20000, MaxConnectionAge: protocol.Duration(10 * time.Minute), DrainTimeout: protocol.Duration(30 * time.Second),
		ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"10.0.0.0/24", "192.0.2.7"}, Send: "v2"}}
	if g.Binding != protocol.PerRequest || g.Health.Send != "PING\r\n" || g.Health.Expect != "+PONG" ||
		g.TCP.MaxConnections != want.MaxConnections || g.TCP.MaxConnectionAge != want.MaxConnectionAge || g.TCP.DrainTimeout != want.DrainTimeout ||
		strings.Join(g.TCP.ProxyProtocol.Trusted, ",") != "10.0.0.0/24,192.0.2.7" || g.TCP.ProxyProtocol.Send != "v2" {
		t.Errorf("parsed %+v (binding %q, health %+v), want tcp %+v, binding per-request", g.TCP, g.Binding, g.Health, want)
	}
}
