package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func validGroup() protocol.Group {
	return protocol.Group{Name: "prime", FrontDoor: "127.0.0.1:8000", Replicas: []protocol.StaticReplica{{Address: "http://127.0.0.1:9001"}}}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	g := WithDefaults(validGroup())
	if g.Protocol != protocol.ProtocolHTTP || g.Binding != protocol.OnDemand || g.Strategy != DefaultStrategy {
		t.Errorf("defaults: protocol %q binding %q strategy %q", g.Protocol, g.Binding, g.Strategy)
	}
	if g.ReportInterval.D() != 500*time.Millisecond || g.Health.Interval.D() != time.Second || g.Health.Timeout.D() != 500*time.Millisecond {
		t.Errorf("durations: %s %s %s", g.ReportInterval, g.Health.Interval, g.Health.Timeout)
	}
	if g.Advertise != "http://127.0.0.1:8000" {
		t.Errorf("advertise = %q", g.Advertise)
	}
	if g.Replicas[0].Weight != 1 {
		t.Errorf("static weight = %v, want 1", g.Replicas[0].Weight)
	}
	if g.Retry != protocol.RetryUnsent {
		t.Errorf("retry = %q, want %q", g.Retry, protocol.RetryUnsent)
	}
	if _, ok := g.Params["dampening"]; !ok {
		t.Errorf("params not completed with the strategy's defaults: %v", g.Params)
	}
	if err := Validate(g); err != nil {
		t.Fatalf("valid group rejected: %v", err)
	}
}

func TestAdvertiseFor(t *testing.T) {
	t.Parallel()
	tests := []struct{ proto, addr, want string }{
		{protocol.ProtocolHTTP, "0.0.0.0:8000", "http://127.0.0.1:8000"},
		{protocol.ProtocolHTTP, ":8000", "http://127.0.0.1:8000"},
		{protocol.ProtocolHTTP, "[::1]:8000", "http://[::1]:8000"},
		{protocol.ProtocolGIOP, "10.0.0.1:2809", "corbaloc:iiop:10.0.0.1:2809"},
		{protocol.ProtocolTCP, "10.0.0.1:5000", "10.0.0.1:5000"},
		{protocol.ProtocolHTTP, "nonsense", ""},
	}
	for _, tt := range tests {
		if got := AdvertiseFor(tt.proto, tt.addr); got != tt.want {
			t.Errorf("AdvertiseFor(%s, %s) = %q, want %q", tt.proto, tt.addr, got, tt.want)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*protocol.Group)
		field  string
		want   string
	}{
		{"bad name", func(g *protocol.Group) { g.Name = "Prime!" }, "name", "[a-z0-9-]+"},
		{"unknown protocol", func(g *protocol.Group) { g.Protocol = "smtp" }, "protocol", "http, giop, tcp"},
		{"bad front door", func(g *protocol.Group) { g.FrontDoor = "8000" }, "front_door", "host:port"},
		{"port out of range", func(g *protocol.Group) { g.FrontDoor = "127.0.0.1:70000" }, "front_door", "0-65535"},
		{"bad binding", func(g *protocol.Group) { g.Binding = "sometimes" }, "binding", "per-session, on-demand, per-request"},
		{"unknown strategy", func(g *protocol.Group) { g.Strategy = "magic" }, "strategy", "least-loaded"},
		{"bad param", func(g *protocol.Group) { g.Params = map[string]any{"dampening": 1.5} }, "params.dampening", "least-loaded"},
		{"unknown param", func(g *protocol.Group) { g.Params = map[string]any{"bogus": 1} }, "params.bogus", "least-loaded"},
		{"report interval too short", func(g *protocol.Group) { g.ReportInterval = protocol.Duration(time.Millisecond) }, "report_interval", "[10ms, 1h0m0s]"},
		{"advertise not a URL", func(g *protocol.Group) { g.Advertise = "ftp://x" }, "advertise", "http://"},
		{"health path", func(g *protocol.Group) { g.Health.Path = "healthz" }, "health.path", "start with '/'"},
		{"health timeout above interval", func(g *protocol.Group) { g.Health.Timeout = protocol.Duration(2 * time.Second) }, "health.timeout", "at most health.interval"},
		{"rise", func(g *protocol.Group) { g.Health.Rise = 1000 }, "health.rise", "[1,100]"},
		{"ejected percent", func(g *protocol.Group) { g.Health.Passive.MaxEjectedPercent = 101 }, "health.passive.max_ejected_percent", "[0,100]"},
		{"max inflight", func(g *protocol.Group) { g.MaxInflight = -1 }, "max_inflight", "[0,1000000]"},
		{"queue limit", func(g *protocol.Group) { queueGroup(g); g.Queue.Limit = -1 }, "queue.limit", "[0,1000000]"},
		{"queue settings without a limit", func(g *protocol.Group) { g.Queue.Order = protocol.QueueCost }, "queue.limit", "at least 1"},
		{"queue on-demand", func(g *protocol.Group) { queueGroup(g); g.Binding = protocol.OnDemand }, "queue.limit", "only per-request"},
		{"queue without max inflight", func(g *protocol.Group) { queueGroup(g); g.MaxInflight = 0 }, "queue.limit", "max_inflight"},
		{"queue timeout", func(g *protocol.Group) { queueGroup(g); g.Queue.Timeout = protocol.Duration(2 * time.Hour) }, "queue.timeout", "[1ms, 1h0m0s]"},
		{"queue order", func(g *protocol.Group) { queueGroup(g); g.Queue.Order = "lifo" }, "queue.order", "fifo, cost"},
		{"queue lead", func(g *protocol.Group) { queueGroup(g); g.Queue.Lead = protocol.Duration(11 * time.Second) }, "queue.lead", "[0s, 10s]"},
		{"negative queue lead", func(g *protocol.Group) { queueGroup(g); g.Queue.Lead = protocol.Duration(-time.Millisecond) }, "queue.lead", "[0s, 10s]"},
		{"queue lead without a limit", func(g *protocol.Group) { g.Queue.Lead = protocol.Duration(time.Millisecond) }, "queue.limit", "queue.lead"},
		{"retry", func(g *protocol.Group) { g.Retry = "always" }, "retry", `invalid value "always", must be one of: unsent, idempotent`},
		{"retry case", func(g *protocol.Group) { g.Retry = "Idempotent" }, "retry", "must be one of: unsent, idempotent"},
		{"replica address", func(g *protocol.Group) { g.Replicas[0].Address = "127.0.0.1:9001" }, "replicas[0].address", "http://"},
		{"duplicate replica", func(g *protocol.Group) {
			g.Replicas = append(g.Replicas, protocol.StaticReplica{Address: "HTTP://127.0.0.1:9001/"})
		}, "replicas[1].address", "unique"},
		{"replica weight", func(g *protocol.Group) { g.Replicas[0].Weight = -2 }, "replicas[0].weight", "(0, 1000000]"},
		{"pull without url", func(g *protocol.Group) { g.Replicas[0].Monitor = protocol.MonitorSpec{Mode: "pull"} }, "replicas[0].monitor.url", "pull mode"},
		{"monitor mode", func(g *protocol.Group) { g.Replicas[0].Monitor = protocol.MonitorSpec{Mode: "poll"} }, "replicas[0].monitor.mode", "push or pull"},
		{"replica tls cert without key", func(g *protocol.Group) { g.ReplicaTLS.Cert = "/etc/fulcrum/client.pem" }, "replica_tls.key", "must be set when replica_tls.cert is"},
		{"replica tls key without cert", func(g *protocol.Group) { g.ReplicaTLS.Key = "/etc/fulcrum/client-key.pem" }, "replica_tls.cert", "must be set when replica_tls.key is"},
		{"replica tls control characters", func(g *protocol.Group) { g.ReplicaTLS.CA = "ca\n.pem" }, "replica_tls.ca", "without control characters"},
		{"replica tls on giop", func(g *protocol.Group) {
			g.Protocol, g.Replicas = protocol.ProtocolGIOP, nil
			g.ReplicaTLS.InsecureSkipVerify = true
		}, "replica_tls", "only allowed with protocol http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := validGroup()
			tt.mutate(&g)
			err := Validate(WithDefaults(g))
			var fe *protocol.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *protocol.FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Error(), tt.want) {
				t.Fatalf("Validate() = field %q, %q; want field %q mentioning %q", fe.Field, fe.Error(), tt.field, tt.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tok, hash := NewToken()
	tok2, _ := NewToken()
	if tok == tok2 || len(tok) < 40 {
		t.Fatalf("tokens not unique or too short: %q %q", tok, tok2)
	}
	if !TokenMatches(tok, hash) || TokenMatches(tok2, hash) || TokenMatches("", hash) {
		t.Fatal("TokenMatches does not tell tokens apart")
	}
	if strings.Contains(hash, tok) {
		t.Fatal("hash contains the token")
	}
	id := NewReplicaID()
	if !nameRE.MatchString(id) {
		t.Fatalf("replica id %q does not match [a-z0-9-]+", id)
	}
}

func TestNormalizeAddress(t *testing.T) {
	t.Parallel()
	if NormalizeAddress("HTTP://Host:80/base/") != NormalizeAddress("http://host:80/base") {
		t.Fatal("addresses differing in case and trailing slash should compare equal")
	}
	if NormalizeAddress("http://a:1") == NormalizeAddress("http://a:2") {
		t.Fatal("different ports compare equal")
	}
}

// queueGroup makes g a group that may queue: per-request, with
// max_inflight and a queue limit.
func queueGroup(g *protocol.Group) {
	g.Binding = protocol.PerRequest
	g.MaxInflight = 4
	g.Queue.Limit = 100
}

func TestQueueDefaults(t *testing.T) {
	t.Parallel()
	g := validGroup()
	queueGroup(&g)
	d := WithDefaults(g)
	if d.Queue.Timeout.D() != DefaultQueueTimeout || d.Queue.Order != protocol.QueueFIFO {
		t.Fatalf("queue after defaults %+v, want timeout %v, order fifo", d.Queue, DefaultQueueTimeout)
	}
	if err := Validate(d); err != nil {
		t.Fatal(err)
	}
	if off := WithDefaults(validGroup()); off.Queue != (protocol.Queue{}) || off.Queue.Enabled() {
		t.Fatalf("a group without a queue got %+v", off.Queue)
	}
}

func TestHTTPGroupsTakeHTTPSReplicas(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"https://10.0.0.5:9443", "HTTPS://replica.example/base"} {
		if err := ValidateAddress(protocol.ProtocolHTTP, a); err != nil {
			t.Errorf("ValidateAddress(http, %q) = %v, want nil", a, err)
		}
	}
	g := validGroup()
	g.Replicas[0].Address = "https://127.0.0.1:9443"
	g.ReplicaTLS = protocol.ReplicaTLS{CA: "/etc/fulcrum/ca.pem", Cert: "/etc/fulcrum/c.pem", Key: "/etc/fulcrum/c-key.pem", ServerName: "replica.internal"}
	if err := Validate(WithDefaults(g)); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
	if err := ValidateAddress(protocol.ProtocolGIOP, "https://10.0.0.5:9443"); err == nil {
		t.Error("a GIOP group took an https:// address")
	}
}

// ValidateAll reports every problem of a group in the order of the
// checks, skipping the checks that depend on a wrong value; Validate
// reports the first.
func TestValidateAll(t *testing.T) {
	t.Parallel()
	g := WithDefaults(validGroup())
	g.Name = "Prime"
	g.Binding = "sometimes"
	g.Strategy = "fastest"
	g.Params = map[string]any{"bogus": 1} // not checked: the strategy is unknown
	g.Health.Interval = protocol.Duration(time.Millisecond)
	g.Health.Timeout = protocol.Duration(time.Hour) // not checked: the interval is wrong
	g.Replicas[0].Weight = -1
	var fields []string
	for _, err := range ValidateAll(g) {
		var fe *protocol.FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("%v is not a *protocol.FieldError", err)
		}
		fields = append(fields, fe.Field)
	}
	want := "name binding strategy health.interval replicas[0].weight"
	if got := strings.Join(fields, " "); got != want {
		t.Errorf("ValidateAll fields %q, want %q", got, want)
	}
	var fe *protocol.FieldError
	if err := Validate(g); !errors.As(err, &fe) || fe.Field != "name" {
		t.Errorf("Validate = %v, want the first problem (name)", err)
	}
	g.Protocol = "udp"
	if errs := ValidateAll(g); len(errs) != 2 || !strings.Contains(errs[1].Error(), "protocol") {
		t.Errorf("with an unknown protocol: %v; want name and protocol, then no more", errs)
	}
}
