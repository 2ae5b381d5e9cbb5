package balancer_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestPerRequestStatusShowsFrontDoorRates proxies calls to two real
// replicas: each replica's status shows a rate and latency quantiles from
// the front door's window, no bound clients, and no ejections yet.
func TestPerRequestStatusShowsFrontDoorRates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(protocol.Group{Name: "pr", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName})
	a := e.mustRegister("pr", newReplica(t, named("a")).URL)
	b := e.mustRegister("pr", newReplica(t, named("b")).URL)
	before := replicaOf(t, e.mustGroup("pr"), a.ID)
	if before.Source != protocol.SourceFrontDoor || before.RPS == nil || *before.RPS != 0 || before.LatencyP50MS != nil {
		t.Fatalf("before any call: source %q rps %v p50 %v, want frontdoor, 0 and null", before.Source, before.RPS, before.LatencyP50MS)
	}
	c := httpClient(t)
	for i := range 20 {
		if ans := get(t, c, fmt.Sprintf("%s/call/%d", st.Advertise, i)); ans.status != http.StatusOK {
			t.Fatalf("call %d: %d, want 200", i, ans.status)
		}
	}
	// The window counts whole seconds: wait for the calls' second to end.
	eventually(t, 5*time.Second, func() error {
		gs := e.mustGroup("pr")
		for _, id := range []string{a.ID, b.ID} {
			r := replicaOf(t, gs, id)
			switch {
			case r.Source != protocol.SourceFrontDoor:
				return fmt.Errorf("%s: source %q, want frontdoor", id, r.Source)
			case r.RPS == nil || *r.RPS <= 0:
				return fmt.Errorf("%s: rps %v, want > 0", id, r.RPS)
			case r.LatencyP50MS == nil || r.LatencyP99MS == nil || *r.LatencyP50MS <= 0 || *r.LatencyP99MS < *r.LatencyP50MS:
				return fmt.Errorf("%s: p50 %v p99 %v, want 0 < p50 <= p99", id, r.LatencyP50MS, r.LatencyP99MS)
			case r.BoundClients != nil:
				return fmt.Errorf("%s: bound clients %d, want null in a per-request group", id, *r.BoundClients)
			case r.Ejections == nil || *r.Ejections != 0:
				return fmt.Errorf("%s: ejections %v, want 0", id, r.Ejections)
			}
		}
		return nil
	})
}

// TestOnDemandStatusShowsReportedRates reports the status metrics of an
// on-demand group's replica: its status shows them with source "report";
// before the report they are null, and with passive ejection off so are
// the ejections.
func TestOnDemandStatusShowsReportedRates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	gs := protocol.Group{Name: "od", Binding: protocol.OnDemand, ReportInterval: ms(50)}
	gs.Health.Passive.ConsecutiveFailures = -1
	e.mustPutGroup(gs)
	reg := e.mustRegister("od", "http://127.0.0.1:9001")
	r := replicaOf(t, e.mustGroup("od"), reg.ID)
	if r.Source != protocol.SourceReport || r.RPS != nil || r.LatencyP50MS != nil || r.LatencyP99MS != nil || r.BoundClients != nil || r.Ejections != nil {
		t.Fatalf("before a report: source %q rps %v p50 %v p99 %v bound %v ejections %v, want report and all null",
			r.Source, r.RPS, r.LatencyP50MS, r.LatencyP99MS, r.BoundClients, r.Ejections)
	}
	rep := protocol.Report{Load: 7, Metrics: map[string]float64{
		protocol.MetricRPS: 7, protocol.MetricLatencyP50MS: 3.5, protocol.MetricLatencyP99MS: 41, protocol.MetricBoundClients: 4,
	}}
	eventually(t, 5*time.Second, func() error {
		e.mustReport(reg.Token, rep)
		r := replicaOf(t, e.mustGroup("od"), reg.ID)
		switch {
		case r.Source != protocol.SourceReport:
			return fmt.Errorf("source %q, want report", r.Source)
		case r.RPS == nil || *r.RPS != 7:
			return fmt.Errorf("rps %v, want 7", r.RPS)
		case r.LatencyP50MS == nil || *r.LatencyP50MS != 3.5 || r.LatencyP99MS == nil || *r.LatencyP99MS != 41:
			return fmt.Errorf("p50 %v p99 %v, want 3.5 and 41", r.LatencyP50MS, r.LatencyP99MS)
		case r.BoundClients == nil || *r.BoundClients != 4:
			return fmt.Errorf("bound clients %v, want 4", r.BoundClients)
		case r.Ejections != nil:
			return fmt.Errorf("ejections %d, want null with passive ejection off", *r.Ejections)
		}
		return nil
	})
}

// TestTCPStatusShowsConnectionRates opens connections through a tcp
// group: each replica's status shows connections/s from the front door and
// no latency (the tcp front door does not see calls).
func TestTCPStatusShowsConnectionRates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(tcpGroup("tcprates", tcpEcho(t, "a"), tcpEcho(t, "b")))
	st := e.mustGroup("tcprates")
	for i := range 4 {
		c := tcpDial(t, st.Listening)
		if got := tcpAsk(t, c, "hi"); !strings.HasSuffix(got, " hi\n") {
			t.Fatalf("connection %d answered %q", i, got)
		}
		c.Close()
	}
	eventually(t, 5*time.Second, func() error {
		gs := e.mustGroup("tcprates")
		if len(gs.Replicas) != 2 {
			return fmt.Errorf("%d replicas, want 2", len(gs.Replicas))
		}
		for _, r := range gs.Replicas {
			switch {
			case r.Source != protocol.SourceFrontDoor:
				return fmt.Errorf("%s: source %q, want frontdoor", r.ID, r.Source)
			case r.RPS == nil || *r.RPS <= 0:
				return fmt.Errorf("%s: connections/s %v, want > 0", r.ID, r.RPS)
			case r.LatencyP50MS != nil || r.LatencyP99MS != nil || r.BoundClients != nil:
				return fmt.Errorf("%s: p50 %v p99 %v bound %v, want all null in a tcp group", r.ID, r.LatencyP50MS, r.LatencyP99MS, r.BoundClients)
			}
		}
		return nil
	})
}
