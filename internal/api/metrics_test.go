package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// sample finds the value of the series name{labels...}; ok is false when
// there is none.
func sample(families map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
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
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Build: buildinfo.Info{Version: "v9.9.9"}}, balancer.Options{})
	// A report counts for three intervals: long enough for a scrape
	// under the race detector.
	e.mustGroup("g", map[string]any{"report_interval": "100ms"})
	r1 := e.mustRegister("g", "http://127.0.0.1:9001")
	r2 := e.mustRegister("g", "http://127.0.0.1:9002")
	steps := e.steps("g")
	ctx := boundedContext(t)

	var families map[string]*dto.MetricFamily
	for {
		// Report as a monitor does, then scrape after the analyzer step.
		want(t, e.call("POST", "/v1/report", r1.Token, `{"load":42,"metrics":{"inflight":3}}`), http.StatusOK)
		nextStep(ctx, t, steps)
		a := e.call("GET", "/metrics", "", nil)
		want(t, a, http.StatusOK)
		if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("Content-Type %q", ct)
		}
		var err error
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(bytes.NewReader(a.body))
		if err != nil {
			t.Fatalf("metrics do not parse: %v\n%s", err, a.body)
		}
		if _, ok := sample(families, "fulcrum_replica_load", "group", "g", "replica", r1.ID); ok {
			break
		}
	}

	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"fulcrum_build_info", []string{"version", "v9.9.9"}, 1},
		{"fulcrum_ready", nil, 1},
		{"fulcrum_group_info", []string{"group", "g", "binding", "on-demand", "strategy", "least-loaded"}, 1},
		{"fulcrum_group_replicas", []string{"group", "g", "state", "active"}, 2},
		{"fulcrum_group_replicas", []string{"group", "g", "state", "draining"}, 0},
		{"fulcrum_group_reported_replicas", []string{"group", "g"}, 1},
		{"fulcrum_group_load", []string{"group", "g"}, 42},
		{"fulcrum_group_advisories", []string{"group", "g", "advisory", "nominal"}, 2},
		{"fulcrum_group_bindings_total", []string{"group", "g"}, 0},
		{"fulcrum_replica_info", []string{"group", "g", "replica", r1.ID, "address", "http://127.0.0.1:9001", "monitor", "push"}, 1},
		{"fulcrum_replica_state", []string{"group", "g", "replica", r1.ID, "state", "active"}, 1},
		{"fulcrum_replica_state", []string{"group", "g", "replica", r1.ID, "state", "down"}, 0},
		{"fulcrum_replica_weight", []string{"group", "g", "replica", r1.ID}, 1},
		{"fulcrum_replica_reported", []string{"group", "g", "replica", r1.ID}, 1},
		{"fulcrum_replica_reported", []string{"group", "g", "replica", r2.ID}, 0},
		{"fulcrum_replica_load", []string{"group", "g", "replica", r1.ID}, 42},
		{"fulcrum_replica_advisory", []string{"group", "g", "replica", r1.ID, "advisory", "nominal"}, 1},
		{"fulcrum_replica_advisory", []string{"group", "g", "replica", r1.ID, "advisory", "high"}, 0},
		{"fulcrum_replica_shed", []string{"group", "g", "replica", r1.ID}, 0},
		{"fulcrum_replica_inflight", []string{"group", "g", "replica", r1.ID}, 0},
		{"fulcrum_replica_bindings_total", []string{"group", "g", "replica", r1.ID}, 0},
		{"fulcrum_replica_rebinds_total", []string{"group", "g", "replica", r1.ID}, 0},
		{"fulcrum_replica_proxied_total", []string{"group", "g", "replica", r1.ID}, 0},
		{"fulcrum_replica_redirected_total", []string{"group", "g", "replica", r1.ID}, 0},
		{"fulcrum_replica_failures_total", []string{"group", "g", "replica", r1.ID}, 0},
	}
	for _, c := range checks {
		got, ok := sample(families, c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, name := range []string{"fulcrum_replica_effective_load", "fulcrum_replica_report_age_seconds"} {
		if _, ok := sample(families, name, "replica", r1.ID); !ok {
			t.Errorf("%s missing for the reported replica", name)
		}
		if _, ok := sample(families, name, "replica", r2.ID); ok {
			t.Errorf("%s present for the unreported replica: its load is unknown, not 0", name)
		}
	}
	if families["fulcrum_replica_bindings_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("bindings is not a counter")
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Errorf("Go collector missing")
	}
}

// TestQueueMetrics: a group with a queue exports its waiting calls and
// outcome counters; a group without one exports neither.
func TestQueueMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("q", map[string]any{"binding": "per-request", "max_inflight": 1, "queue": map[string]any{"limit": 4}})
	e.mustGroup("plain", map[string]any{"binding": "per-request"})
	a := e.call("GET", "/metrics", "", nil)
	want(t, a, http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(a.body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	if v, ok := sample(families, "fulcrum_group_queue_waiting", "group", "q"); !ok || v != 0 {
		t.Errorf("fulcrum_group_queue_waiting{group=q} = %v (present %v), want 0", v, ok)
	}
	for _, outcome := range []string{"served", "full", "timed_out"} {
		if v, ok := sample(families, "fulcrum_group_queue_calls_total", "group", "q", "outcome", outcome); !ok || v != 0 {
			t.Errorf("fulcrum_group_queue_calls_total{group=q,outcome=%s} = %v (present %v), want 0", outcome, v, ok)
		}
	}
	if families["fulcrum_group_queue_calls_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("queue calls is not a counter")
	}
	if _, ok := sample(families, "fulcrum_group_queue_waiting", "group", "plain"); ok {
		t.Errorf("a group without a queue exports fulcrum_group_queue_waiting")
	}
	wait := families["fulcrum_group_queue_wait_seconds"]
	if wait.GetType() != dto.MetricType_HISTOGRAM || len(wait.GetMetric()) != 1 || wait.GetMetric()[0].GetHistogram().GetSampleCount() != 0 {
		t.Errorf("fulcrum_group_queue_wait_seconds = %v, want one empty histogram (group q only)", wait)
	}
}

// The queue's wait counts become a cumulative histogram at the queue's
// bounds, in seconds, with the served calls as its count.
func TestQueueWaitHistogram(t *testing.T) {
	t.Parallel()
	counts := make([]uint64, len(frontdoor.QueueWaitBounds)+1)
	counts[0], counts[2], counts[len(counts)-1] = 1, 2, 1 // ≤0.5ms; (1ms, 2ms]; above a minute
	d := prometheus.NewDesc("w", "w", []string{"group"}, nil)
	var m dto.Metric
	if err := api.QueueWaitHistogram(d, protocol.QueueStats{WaitSeconds: 61.5, WaitCounts: counts}, "q").Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != 4 || h.GetSampleSum() != 61.5 {
		t.Errorf("count %d, sum %v; want 4 and 61.5", h.GetSampleCount(), h.GetSampleSum())
	}
	b := h.GetBucket()
	if len(b) != len(frontdoor.QueueWaitBounds) {
		t.Fatalf("%d buckets, want %d", len(b), len(frontdoor.QueueWaitBounds))
	}
	for i, want := range map[int]struct {
		le  float64
		cum uint64
	}{0: {0.0005, 1}, 1: {0.001, 1}, 2: {0.002, 3}, len(b) - 1: {60, 3}} {
		if b[i].GetUpperBound() != want.le || b[i].GetCumulativeCount() != want.cum {
			t.Errorf("bucket %d: le %v, count %d; want le %v, count %d", i, b[i].GetUpperBound(), b[i].GetCumulativeCount(), want.le, want.cum)
		}
	}
}

// TestMetricsStaleReportAge: a replica that reported, then stopped (its
// monitor died), keeps its last report's age in the status and in
// fulcrum_replica_report_age_seconds; it is no longer counted as reported,
// and the group's oldest-fresh-report gauge goes away with it.
func TestMetricsStaleReportAge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", map[string]any{"report_interval": "10ms"})
	r := e.mustRegister("g", "http://127.0.0.1:9001")
	steps := e.steps("g")
	ctx := boundedContext(t)
	want(t, e.call("POST", "/v1/report", r.Token, `{"load":7}`), http.StatusOK)

	// Steps go on every interval; wait for the one that finds the report
	// stale (older than three intervals). A step that ran before the
	// report was taken shows the replica as never reported (no age): not
	// that one.
	var families map[string]*dto.MetricFamily
	for {
		nextStep(ctx, t, steps)
		a := e.call("GET", "/metrics", "", nil)
		want(t, a, http.StatusOK)
		var err error
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(bytes.NewReader(a.body))
		if err != nil {
			t.Fatalf("metrics do not parse: %v\n%s", err, a.body)
		}
		_, aged := sample(families, "fulcrum_replica_report_age_seconds", "group", "g", "replica", r.ID)
		if v, ok := sample(families, "fulcrum_replica_reported", "group", "g", "replica", r.ID); ok && v == 0 && aged {
			break
		}
	}
	age, ok := sample(families, "fulcrum_replica_report_age_seconds", "group", "g", "replica", r.ID)
	if !ok || age < 0.030 {
		t.Errorf("fulcrum_replica_report_age_seconds of a stale replica = %v (present %v), want >= 0.03", age, ok)
	}
	if _, ok := sample(families, "fulcrum_replica_load", "group", "g", "replica", r.ID); ok {
		t.Errorf("fulcrum_replica_load present for a stale replica: its load is unknown")
	}
	if _, ok := sample(families, "fulcrum_group_report_age_max_seconds", "group", "g"); ok {
		t.Errorf("fulcrum_group_report_age_max_seconds present with no fresh report")
	}
	var st protocol.GroupStatus
	e.call("GET", "/v1/groups/g", "", nil).decode(t, &st)
	if got := st.Replicas[0].ReportAgeMS; got == nil || *got < 30 {
		t.Errorf("report_age_ms of a stale replica = %v, want >= 30 (null means never reported)", got)
	}
}
