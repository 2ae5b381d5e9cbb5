package balancer_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestWorkerReportsCombine: the workers of a multi-process replica share
// one id and token; the analyzer gets the combination of each worker's
// latest report (sums, rps-weighted latency), paced by the lowest fresh
// worker, and a worker whose last report is older than three report
// intervals drops out. Moves the balancer's clock by hand, in a synctest
// bubble.
func TestWorkerReportsCombine(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testWorkerReportsCombine)
}

func testWorkerReportsCombine(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	e.mustPutGroup(protocol.Group{Name: "w", ReportInterval: ms(20)})
	const addr = "http://127.0.0.1:9001"
	w0 := e.mustRegisterWith("w", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 0, Count: 2}})
	w1, created, err := e.b.Register("w", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 1, Count: 2}})
	if err != nil || created || w1.ID != w0.ID || w1.Token != w0.Token {
		t.Fatalf("sibling registration: %+v created %v err %v; want id %s and the same token", w1, created, err, w0.ID)
	}
	events := e.subscribe("w")
	loadIs := func(want float64) func(map[string]stepReplica) error {
		return func(r map[string]stepReplica) error {
			if got := r[w0.ID].Load; got == nil || *got != want {
				return fmt.Errorf("load %v, want %v", got, want)
			}
			return nil
		}
	}
	report := func(index int, load, latency float64, client string) protocol.Advisory {
		return e.mustReport(w0.Token, protocol.Report{
			Load:    load,
			Metrics: map[string]float64{protocol.MetricRPS: load, protocol.MetricLatencyMS: latency},
			Clients: []protocol.ClientRate{{ID: client, Rate: load}},
			Worker:  &protocol.Worker{Index: index, Count: 2},
		})
	}

	report(0, 10, 2, "a")
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), loadIs(10)))
	// Worker 1 does not pace while worker 0 is fresh: its report waits
	// for worker 0's next one.
	adv1 := report(1, 30, 6, "b")
	adv0 := report(0, 10, 2, "a")
	if adv0.Epoch != adv1.Epoch || adv0.Advisory != adv1.Advisory || adv0.Term != adv1.Term {
		t.Errorf("workers got different advisories: %+v and %+v", adv0, adv1)
	}
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), loadIs(40)))
	r := replicaOf(t, e.mustGroup("w"), w0.ID)
	// (10·2 + 30·6) / 40 = 5.
	if r.Metrics[protocol.MetricRPS] != 40 || r.Metrics[protocol.MetricLatencyMS] != 5 {
		t.Errorf("combined metrics %v, want rps 40 and latency_ms 5", r.Metrics)
	}
	if r.Workers == nil || *r.Workers != (protocol.WorkersStatus{Count: 2, Reporting: 2}) {
		t.Errorf("workers %+v, want count 2, 2 reporting", r.Workers)
	}

	// Past three intervals both are stale; worker 1 reports alone and
	// paces: the combination is its report.
	clock.Advance(61 * time.Millisecond)
	report(1, 30, 6, "b")
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), loadIs(30)))
	r = replicaOf(t, e.mustGroup("w"), w0.ID)
	if r.Workers == nil || r.Workers.Reporting != 1 {
		t.Errorf("workers %+v, want 1 reporting", r.Workers)
	}
	if r.Metrics[protocol.MetricLatencyMS] != 6 {
		t.Errorf("latency_ms %v, want worker 1's 6 alone", r.Metrics[protocol.MetricLatencyMS])
	}
}

// TestWorkerCountSurvivesRestart: the worker count is persisted with the
// replica. After a restart the instance no longer knows the token, so a
// sibling's join issues a fresh one (same id) and the older stops
// working; a sibling with another count is still a conflict.
func TestWorkerCountSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "w", ReportInterval: ms(20)})
	const addr = "http://127.0.0.1:9001"
	first := e.mustRegisterWith("w", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 0, Count: 4}})

	e2 := e.reopen(envOptions{})
	_, _, err := e2.b.Register("w", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 1, Count: 3}})
	var wc *balancer.WorkerConflictError
	if !errors.As(err, &wc) || wc.Field != "worker.count" || wc.Stored != 4 || wc.Given != 3 || wc.ExistingID != first.ID {
		t.Fatalf("sibling with 3 workers after restart: %v, want a worker.count conflict 4 vs 3", err)
	}
	_, _, err = e2.b.Register("w", protocol.Registration{Address: addr})
	if !errors.As(err, &wc) || wc.Field != "worker" {
		t.Fatalf("single-process registration after restart: %v, want a worker conflict", err)
	}
	e2.mustReport(first.Token, protocol.Report{Load: 1, Worker: &protocol.Worker{Index: 0, Count: 4}})

	sib, created, err := e2.b.Register("w", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 1, Count: 4}})
	if err != nil || created || sib.ID != first.ID || sib.Token == first.Token {
		t.Fatalf("sibling after restart: %+v created %v err %v; want id %s with a fresh token", sib, created, err, first.ID)
	}
	if _, err := e2.b.Report(first.Token, protocol.Report{Load: 1, Worker: &protocol.Worker{Index: 0, Count: 4}}); !errors.Is(err, balancer.ErrUnknownToken) {
		t.Errorf("the token from before the restart after a fresh one was issued: %v, want ErrUnknownToken", err)
	}
	// The next sibling gets the fresh token.
	again, _, err := e2.b.Register("w", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 0, Count: 4}})
	if err != nil || again.Token != sib.Token {
		t.Fatalf("the next sibling got %+v (err %v), want token %s", again, err, sib.Token)
	}
	e2.mustReport(sib.Token, protocol.Report{Load: 1, Worker: &protocol.Worker{Index: 2, Count: 4}})
}

// TestWorkersShareTheShed: a high advisory that names no clients (the
// reports list none) reaches every worker of the replica with the same
// epoch, each with its part of the replica's shed in proportion to its
// load, so that together they shed it once. In a synctest bubble.
func TestWorkersShareTheShed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testWorkersShareTheShed)
}

func testWorkersShareTheShed(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	e.mustPutGroup(protocol.Group{Name: "sh", Binding: protocol.OnDemand, Strategy: strategy.LeastLoadedName, ReportInterval: ms(20)})
	const addr = "http://127.0.0.1:9001"
	a := e.mustRegisterWith("sh", protocol.Registration{Address: addr, Worker: &protocol.Worker{Index: 0, Count: 2}})
	b := e.mustRegister("sh", "http://127.0.0.1:9002")
	events := e.subscribe("sh")
	worker := func(index int, load float64) protocol.Report {
		return protocol.Report{Load: load, Worker: &protocol.Worker{Index: index, Count: 2}}
	}

	var high0, high1 protocol.Advisory
	for range 15 {
		e.mustReport(a.Token, worker(1, 25))
		if adv := e.mustReport(a.Token, worker(0, 75)); adv.Advisory == protocol.High {
			high0 = adv
			high1 = e.mustReport(a.Token, worker(1, 25))
			break
		}
		e.mustReport(b.Token, protocol.Report{Load: 10})
		waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(map[string]stepReplica) error { return nil }))
	}
	if high0.Advisory != protocol.High || len(high0.Clients) != 0 {
		t.Fatalf("the busy replica's pacing worker got %+v, want high naming no clients", high0)
	}
	if high1.Advisory != protocol.High || high1.Epoch != high0.Epoch || high1.Term != high0.Term {
		t.Fatalf("worker 1 got %+v, worker 0 %+v: want the same advisory", high1, high0)
	}
	shed := replicaOf(t, e.mustGroup("sh"), a.ID).Shed
	if shed <= 0 || math.Abs(high0.Shed-0.75*shed) > 1e-9 || math.Abs(high1.Shed-0.25*shed) > 1e-9 {
		t.Fatalf("worker sheds %v and %v of the replica's %v, want 75%% and 25%%", high0.Shed, high1.Shed, shed)
	}
}
