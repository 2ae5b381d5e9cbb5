package api_test

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestReportBounds: loads and shares far out of range are refused naming
// the field and the value, shares a little above 1 are taken as 1, and
// the group's load sums in /metrics stay finite. Before the bounds, two
// replicas reporting a load of 1e308 each made fulcrum_group_load +Inf.
func TestReportBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", map[string]any{"report_interval": "100ms"})
	r1 := e.mustRegister("g", "http://127.0.0.1:9001")
	r2 := e.mustRegister("g", "http://127.0.0.1:9002")

	for _, tc := range []struct{ body, field, value string }{
		{`{"load":1e308}`, "load", "1e+308"},
		{`{"load":1,"metrics":{"cpu":5}}`, "metrics.cpu", "5"},
		{`{"load":1,"metrics":{"utilization":-0.5}}`, "metrics.utilization", "-0.5"},
		{`{"load":1,"metrics":{"bw":1.6}}`, "metrics.bw", "1.6"},
		{`{"load":1,"metrics":{"latency_p50_ms":-2}}`, "metrics.latency_p50_ms", "-2"},
		{`{"load":1,"metrics":{"latency_p99_ms":2e8}}`, "metrics.latency_p99_ms", "2e+08"},
		{`{"load":1,"metrics":{"bound_clients":1.5}}`, "metrics.bound_clients", "1.5"},
		{`{"load":1,"clients":[{"id":"c","rate":1e300}]}`, "clients[0].rate", "1e+300"},
	} {
		got := wantError(t, e.call("POST", "/v1/report", r1.Token, tc.body), http.StatusBadRequest, "invalid_value", tc.field)
		if !strings.Contains(got.Message, tc.value) || got.Allowed == "" {
			t.Errorf("%s: error %+v does not name the value %s and what is allowed", tc.body, got, tc.value)
		}
	}

	steps := e.steps("g")
	ctx := boundedContext(t)
	top := `{"load":1e12,"metrics":{"cpu":1.4,"utilization":0.5}}`
	for {
		want(t, e.call("POST", "/v1/report", r1.Token, top), http.StatusOK)
		want(t, e.call("POST", "/v1/report", r2.Token, top), http.StatusOK)
		nextStep(ctx, t, steps)
		a := e.call("GET", "/v1/groups/g", "", nil)
		want(t, a, http.StatusOK)
		var st protocol.GroupStatus
		a.decode(t, &st)
		if len(st.Replicas) != 2 || st.Replicas[0].Load == nil || st.Replicas[1].Load == nil {
			continue
		}
		for _, rs := range st.Replicas {
			if cpu := rs.Metrics[protocol.MetricCPU]; cpu != 1 || rs.Metrics[protocol.MetricUtilization] != 0.5 {
				t.Errorf("replica %s metrics %v, want cpu 1.4 taken as 1 and utilization 0.5", rs.ID, rs.Metrics)
			}
		}
		break
	}
	a := e.call("GET", "/metrics", "", nil)
	want(t, a, http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(a.body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	for _, name := range []string{"fulcrum_group_load", "fulcrum_group_effective_load", "fulcrum_group_shed"} {
		v, ok := sample(families, name, "group", "g")
		if !ok || math.IsInf(v, 0) || math.IsNaN(v) {
			t.Errorf("%s = %v (present %v), want a finite sum", name, v, ok)
		}
	}
	if v, _ := sample(families, "fulcrum_group_load", "group", "g"); v != 2*protocol.MaxLoad {
		t.Errorf("fulcrum_group_load = %v, want %v", v, 2*protocol.MaxLoad)
	}
}
