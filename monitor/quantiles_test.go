package monitor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/loghist"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// near reports whether got (ms) is within 12.5% of want.
func near(got, want float64) bool { return got >= want*0.875 && got <= want*1.125 }

func TestWindowQuantilesOfTheWindowOnly(t *testing.T) {
	t.Parallel()
	var h latencyHistogram
	var start, end [loghist.Buckets]uint64
	if _, _, ok := windowQuantiles(&end, &start); ok {
		t.Fatal("empty window: ok, want no quantiles")
	}
	// An earlier window's slow calls must not count in the next one.
	for range 50 {
		h.add(time.Second)
	}
	h.load(&start)
	for i := range 100 {
		d := 4 * time.Millisecond
		if i >= 98 {
			d = 250 * time.Millisecond
		}
		h.add(d)
	}
	h.load(&end)
	p50, p99, ok := windowQuantiles(&end, &start)
	if !ok || !near(p50, 4) || !near(p99, 250) {
		t.Errorf("p50 %v p99 %v ok %v, want about 4ms and 250ms", p50, p99, ok)
	}
}

// TestReportCarriesQuantilesAndBoundClients measures calls on an injected
// clock: the report of the window has their p50 and p99 and the number
// of distinct bound clients that called in it; the next window, without
// calls, has no quantiles and no bound clients.
func TestReportCarriesQuantilesAndBoundClients(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m, err := New(Options{Token: "t", Mode: protocol.MonitorPull, PullURL: "http://replica/fulcrum/report", Clock: fixedClock{&now}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(client string, bound bool, d time.Duration) {
		c, ok := m.Begin(client, bound)
		if !ok {
			t.Fatal("Begin refused a call under no advisory")
		}
		now = now.Add(d)
		c.End()
	}
	for i := range 100 {
		d := 10 * time.Millisecond
		if i == 99 {
			d = 600 * time.Millisecond
		}
		call([]string{"c1", "c2", "c3"}[i%3], true, d)
	}
	call("unbound", false, 10*time.Millisecond)
	pull := func() protocol.Report {
		rec := httptest.NewRecorder()
		m.PullHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fulcrum/report", nil))
		var rep protocol.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if err := rep.Validate(); err != nil {
			t.Fatalf("report does not validate: %v", err)
		}
		return rep
	}
	rep := pull()
	if p50 := rep.Metrics[protocol.MetricLatencyP50MS]; !near(p50, 10) {
		t.Errorf("p50 %v, want about 10ms", p50)
	}
	// 101 calls: the 100th smallest is a 10ms one, so p99 is 10ms...
	if p99 := rep.Metrics[protocol.MetricLatencyP99MS]; !near(p99, 10) {
		t.Errorf("p99 %v, want about 10ms", p99)
	}
	if b := rep.Metrics[protocol.MetricBoundClients]; b != 3 {
		t.Errorf("bound clients %v, want 3 (c1, c2, c3; the unbound caller is not)", b)
	}
	// ...and with 50 more slow calls it is the slow one.
	for range 50 {
		call("c1", true, 600*time.Millisecond)
	}
	rep = pull()
	if p99, p50 := rep.Metrics[protocol.MetricLatencyP99MS], rep.Metrics[protocol.MetricLatencyP50MS]; !near(p99, 600) || !near(p50, 600) {
		t.Errorf("second window: p50 %v p99 %v, want both about 600ms (only its own calls)", p50, p99)
	}
	if b := rep.Metrics[protocol.MetricBoundClients]; b != 1 {
		t.Errorf("second window: bound clients %v, want 1", b)
	}
	now = now.Add(time.Second)
	rep = pull()
	if _, ok := rep.Metrics[protocol.MetricLatencyP50MS]; ok {
		t.Errorf("a window without calls: p50 %v, want none", rep.Metrics[protocol.MetricLatencyP50MS])
	}
	if b, ok := rep.Metrics[protocol.MetricBoundClients]; !ok || b != 0 {
		t.Errorf("a window without calls: bound clients %v (present %v), want 0", b, ok)
	}
}
