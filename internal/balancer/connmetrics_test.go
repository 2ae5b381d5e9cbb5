package balancer_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

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

	body := get(t, c, e.adminURL+"/metrics").body
	value := scrape(t, body)
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
	if strings.Contains(body, "10.0.0.9") {
		t.Errorf("a client address is a metric label")
	}
}

// scrape parses a /metrics answer and returns a lookup of the series
// name{labels...} with exactly those labels (ok false when absent).
func scrape(t *testing.T, body string) func(name string, labels ...string) (float64, bool) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return func(name string, labels ...string) (float64, bool) {
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
}

// TestConnectionMetricsThroughFrontDoor counts real connections at a tcp
// group's front door: one refused while the group has no replica, one
// proxied to a replica and closed, whose bytes each way are then exact.
func TestConnectionMetricsThroughFrontDoor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{admin: true})
	st := e.mustPutGroup(protocol.Group{Name: "echo", Protocol: protocol.ProtocolTCP, Strategy: "round-robin"})
	c := adminClient(t)

	refused, err := net.DialTimeout("tcp", st.Listening, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = refused.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := refused.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a connection with no replica to go to read %d bytes, %v; want it closed", n, err)
	}
	refused.Close()

	r := e.mustRegister("echo", tcpEcho(t, "a"))
	conn, err := net.DialTimeout("tcp", st.Listening, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "a hello\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	conn.Close()
	eventually(t, 10*time.Second, func() error {
		value := scrape(t, get(t, c, e.adminURL+"/metrics").body)
		for _, w := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"fulcrum_replica_connections", []string{"group", "echo", "replica", r.ID}, 0},
			{"fulcrum_replica_connections_accepted_total", []string{"group", "echo", "replica", r.ID}, 1},
			{"fulcrum_replica_connection_bytes_total", []string{"group", "echo", "replica", r.ID, "direction", "in"}, 6},
			{"fulcrum_replica_connection_bytes_total", []string{"group", "echo", "replica", r.ID, "direction", "out"}, 8},
			{"fulcrum_group_connections_accepted_total", []string{"group", "echo"}, 1},
			{"fulcrum_group_connections_refused_total", []string{"group", "echo", "reason", conntable.RefuseNoReplica}, 1},
			{"fulcrum_group_connections_refused_total", []string{"group", "echo", "reason", conntable.RefuseMaxConnections}, 0},
		} {
			if v, ok := value(w.name, w.labels...); !ok || v != w.want {
				return fmt.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.want)
			}
		}
		return nil
	})
}
