package balancer_test

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestConnectionMetrics fills a tcp group's connection table by hand and
// reads the connection metrics of the real admin API's /metrics.
func TestConnectionMetrics(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	e := newEnv(t, envOptions{clock: clk, admin: true})
	e.mustPutGroup(protocol.Group{Name: "t", Protocol: protocol.ProtocolTCP, Binding: protocol.PerRequest})
	e.mustPutGroup(protocol.Group{Name: "h"})
	fillConnTable(e, clk, "t")
	fillConnTable(e, clk, "h")
	c := adminClient(t)

	a := get(t, c, e.adminURL+"/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(a.body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	value := func(name string, labels ...string) (float64, bool) {
		f := families[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, m := range f.Metric {
			have := map[string]string{}
			for _, lp := range m.Label {
				have[lp.GetName()] = lp.GetValue()
			}
			if len(have) != len(labels)/2 {
				continue
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue(), true
			}
			return m.Gauge.GetValue(), true
		}
		return 0, false
	}
	for _, w := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"fulcrum_replica_connections", []string{"group", "t", "replica", "r1"}, 2},
		{"fulcrum_replica_connections", []string{"group", "t", "replica", "r2"}, 2},
		{"fulcrum_replica_connections_accepted_total", []string{"group", "t", "replica", "r1"}, 3},
		{"fulcrum_replica_connection_bytes_total", []string{"group", "t", "replica", "r1", "direction", "in"}, 100},
		{"fulcrum_replica_connection_bytes_total", []string{"group", "t", "replica", "r1", "direction", "out"}, 2005},
		{"fulcrum_replica_connection_bytes_total", []string{"group", "t", "replica", "r2", "direction", "in"}, 7},
		{"fulcrum_group_connections", []string{"group", "t"}, 4},
		{"fulcrum_group_connections_accepted_total", []string{"group", "t"}, 5},
		{"fulcrum_group_connection_bytes_total", []string{"group", "t", "direction", "in"}, 107},
		{"fulcrum_group_connection_bytes_total", []string{"group", "t", "direction", "out"}, 2005},
		{"fulcrum_group_connections_refused_total", []string{"group", "t", "reason", conntable.RefuseMaxConnections}, 2},
		{"fulcrum_group_connections_refused_total", []string{"group", "t", "reason", conntable.RefuseNoReplica}, 1},
		{"fulcrum_group_connections_refused_total", []string{"group", "t", "reason", conntable.RefuseProxyHeader}, 0},
	} {
		if v, ok := value(w.name, w.labels...); !ok || v != w.want {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.want)
		}
	}
	if _, ok := value("fulcrum_group_connections", "group", "h"); ok {
		t.Errorf("an http group has connection metrics")
	}
	if strings.Contains(a.body, "10.0.0.9") {
		t.Errorf("a client address is a metric label")
	}
}
