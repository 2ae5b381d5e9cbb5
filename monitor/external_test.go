package monitor

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestNewExternalNeedsMetrics(t *testing.T) {
	_, err := NewExternal(Options{Token: "t", Mode: protocol.MonitorPull, PullURL: "http://a/r"}, nil)
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("error %v, want ErrInvalidOptions", err)
	}
}

// TestExternalReportsTheSuppliedMetrics pulls reports from a monitor made
// by NewExternal: its metrics are the supplied ones (unusable values
// dropped), its load the one Load names, and the calls it measured itself
// do not show.
func TestExternalReportsTheSuppliedMetrics(t *testing.T) {
	for _, tc := range []struct {
		load LoadSource
		want float64
	}{
		{LoadRate, 120}, {LoadInflight, 3}, {LoadCPU, 0.4}, {LoadLatency, 25},
	} {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		calls := 0
		m, err := NewExternal(Options{
			Token: "t", Mode: protocol.MonitorPull, PullURL: "http://replica/fulcrum/report", Load: tc.load,
			Clock: fixedClock{&now},
		}, func(time.Time) map[string]float64 {
			calls++
			return map[string]float64{
				protocol.MetricRPS: 120, protocol.MetricInflight: 3, protocol.MetricCPU: 0.4,
				protocol.MetricLatencyMS: 25, "bad": math.NaN(), "neg": -1,
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// A call through the middleware is the agent's, not the replica's.
		c, _ := m.Begin("", false)
		c.End()
		now = now.Add(time.Second)
		rec := httptest.NewRecorder()
		m.PullHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fulcrum/report", nil))
		var rep protocol.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Load != tc.want {
			t.Errorf("load %s: %v, want %v", tc.load, rep.Load, tc.want)
		}
		if len(rep.Metrics) != 4 || rep.Metrics[protocol.MetricRPS] != 120 || len(rep.Clients) != 0 {
			t.Errorf("report %+v, want the four usable supplied metrics and no clients", rep)
		}
		if err := rep.Validate(); err != nil {
			t.Errorf("report does not validate: %v", err)
		}
		// A second pull at the same instant repeats the report without
		// closing a window.
		m.PullHandler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/fulcrum/report", nil))
		if calls != 1 {
			t.Errorf("metrics called %d times for one window, want 1", calls)
		}
	}
}

// fixedClock is a clock at *t; After never fires.
type fixedClock struct{ t *time.Time }

func (c fixedClock) Now() time.Time                     { return *c.t }
func (fixedClock) After(time.Duration) <-chan time.Time { return nil }

// TestExternalClampsShares: a supplied share above 1 is sent as 1 and a
// supplied load above protocol.MaxLoad as MaxLoad, so that the balancer,
// which refuses shares above protocol.MaxShare and loads above MaxLoad,
// takes the report.
func TestExternalClampsShares(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m, err := NewExternal(Options{
		Token: "t", Mode: protocol.MonitorPull, PullURL: "http://replica/fulcrum/report", Load: LoadRate,
		Clock: fixedClock{&now},
	}, func(time.Time) map[string]float64 {
		return map[string]float64{protocol.MetricCPU: 3, protocol.MetricUtilization: 0.5, protocol.MetricRPS: 1e300}
	})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	rec := httptest.NewRecorder()
	m.PullHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fulcrum/report", nil))
	rep, err := protocol.DecodeReport(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("the balancer would refuse the report %s: %v", rec.Body.Bytes(), err)
	}
	if rep.Metrics[protocol.MetricCPU] != 1 || rep.Metrics[protocol.MetricUtilization] != 0.5 || rep.Load != protocol.MaxLoad {
		t.Fatalf("report %+v, want cpu 1, utilization 0.5, load MaxLoad", rep)
	}
}
