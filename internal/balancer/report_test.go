package balancer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestReportAnswersTheGroupsInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "ri", ReportInterval: ms(40)})
	reg := e.mustRegister("ri", "http://127.0.0.1:9001")

	adv := e.mustReport(reg.Token, protocol.Report{Load: 3})
	if adv.Advisory != protocol.Nominal || adv.Epoch == 0 || adv.ReportInterval != ms(40) {
		t.Errorf("advisory %+v, want nominal, an epoch, report_interval 40ms", adv)
	}
	// The group's interval is authoritative: a change shows in the next
	// answer.
	e.mustPutGroup(protocol.Group{Name: "ri", ReportInterval: ms(70)})
	if adv := e.mustReport(reg.Token, protocol.Report{Load: 3}); adv.ReportInterval != ms(70) {
		t.Errorf("after the group's interval changed: advisory %+v, want report_interval 70ms", adv)
	}

	for _, tok := range []string{"", "frt_not-a-token", reg.Token + "x"} {
		if _, err := e.b.Report(tok, protocol.Report{Load: 1}); !errors.Is(err, balancer.ErrUnknownToken) {
			t.Errorf("Report(%q) = %v, want ErrUnknownToken", tok, err)
		}
	}
}

// TestStaleReportsAreUnreported moves the balancer's clock by hand: a
// report two intervals old still counts, one older than three intervals
// leaves the replica unreported (load null), not idle.
// In a synctest bubble (bubble_test.go).
func TestStaleReportsAreUnreported(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testStaleReportsAreUnreported)
}

func testStaleReportsAreUnreported(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	e.mustPutGroup(protocol.Group{Name: "stale", ReportInterval: ms(20)})
	reg := e.mustRegister("stale", "http://127.0.0.1:9001")
	events := e.subscribe("stale")

	loadIs := func(want *float64) func(map[string]stepReplica) error {
		return func(r map[string]stepReplica) error {
			got := r[reg.ID].Load
			switch {
			case want == nil && got != nil:
				return fmt.Errorf("load %v, want unreported", *got)
			case want != nil && (got == nil || *got != *want):
				return fmt.Errorf("load %v, want %v", got, *want)
			}
			return nil
		}
	}
	five := 5.0

	e.mustReport(reg.Token, protocol.Report{Load: 5})
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), loadIs(&five)))
	r := replicaOf(t, e.mustGroup("stale"), reg.ID)
	if r.Load == nil || *r.Load != 5 || r.ReportAgeMS == nil || *r.ReportAgeMS != 0 {
		t.Fatalf("fresh report: load %v age %v, want 5 and 0ms", r.Load, r.ReportAgeMS)
	}

	at := clock.Advance(40 * time.Millisecond) // two intervals: fresh
	waitEvent(t, events, 5*time.Second, stepAfter(at, loadIs(&five)))
	r = replicaOf(t, e.mustGroup("stale"), reg.ID)
	if r.Load == nil || r.ReportAgeMS == nil || *r.ReportAgeMS != 40 {
		t.Fatalf("report two intervals old: load %v age %v, want 5 and 40ms", r.Load, r.ReportAgeMS)
	}

	at = clock.Advance(21 * time.Millisecond) // past three intervals: stale
	waitEvent(t, events, 5*time.Second, stepAfter(at, loadIs(nil)))
	r = replicaOf(t, e.mustGroup("stale"), reg.ID)
	if r.Load != nil || r.EffectiveLoad != nil {
		t.Fatalf("stale report: load %v effective %v, want both null", r.Load, r.EffectiveLoad)
	}
	// The age of the last report is kept: null would say "never reported".
	if r.ReportAgeMS == nil || *r.ReportAgeMS != 61 {
		t.Fatalf("stale report: age %v, want 61ms (kept once stale)", r.ReportAgeMS)
	}

	// A new report makes it reported again, from the new sample.
	e.mustReport(reg.Token, protocol.Report{Load: 9})
	nine := 9.0
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), loadIs(&nine)))
	if r := replicaOf(t, e.mustGroup("stale"), reg.ID); r.EffectiveLoad == nil || *r.EffectiveLoad != 9 {
		t.Errorf("first report after going stale: effective load %v, want 9 (dampening restarts)", r.EffectiveLoad)
	}
}

// TestPullMode registers a replica whose monitor is polled: every poll
// carries the current advisory in Fulcrum-Advisory, and the answered load
// shows in the group's status.
// In a synctest bubble (bubble_test.go).
func TestPullMode(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testPullMode)
}

func testPullMode(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	e.mustPutGroup(protocol.Group{Name: "pull", ReportInterval: ms(20)})
	polls := make(chan protocol.Advisory, 16)
	monURL := newMemReplica(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var adv protocol.Advisory
		if err := json.Unmarshal([]byte(r.Header.Get(protocol.HeaderAdvisory)), &adv); err != nil {
			http.Error(w, "bad advisory header: "+err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case polls <- adv:
		default:
		}
		io.WriteString(w, `{"load": 7, "metrics": {"rps": 7, "inflight": 1}}`)
	}))
	reg := e.mustRegisterWith("pull", protocol.Registration{
		Address: monURL,
		Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: monURL + "/fulcrum/report"},
	})

	waitPoll := func(want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var last protocol.Advisory
		for {
			select {
			case last = <-polls:
				if last.Advisory == want && last.ReportInterval == ms(20) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no poll with a %s advisory; last %+v", want, last)
			}
		}
	}
	waitPoll(protocol.Nominal)
	eventually(t, 5*time.Second, func() error {
		r := replicaOf(t, e.mustGroup("pull"), reg.ID)
		if r.Monitor != protocol.MonitorPull || r.Load == nil || *r.Load != 7 || r.Metrics[protocol.MetricRPS] != 7 {
			return fmt.Errorf("replica %+v, want pull with load 7", r)
		}
		return nil
	})

	if err := e.b.Drain("pull", reg.ID); err != nil {
		t.Fatal(err)
	}
	waitPoll(protocol.Drain)
}

// TestPullModeWithMonitor polls the real monitor middleware, registered
// through the real admin API.
// In a synctest bubble (bubble_test.go).
func TestPullModeWithMonitor(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testPullModeWithMonitor)
}

func testPullModeWithMonitor(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n, admin: true})
	e.mustPutGroup(protocol.Group{Name: "mpull", ReportInterval: ms(20)})

	srv := newMemUnstartedReplica(t, n)
	mon, err := monitor.New(monitor.Options{
		Admin:      e.adminURL,
		Group:      "mpull",
		Address:    srv.URL(),
		Mode:       protocol.MonitorPull,
		LoadFunc:   func() float64 { return 4 },
		HTTPClient: memAdminClient(t, n),
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.start(mon.Handler(named("replica")))
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeMonitor(t, mon) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reg, err := mon.WaitRegistered(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		r := replicaOf(t, e.mustGroup("mpull"), reg.ID)
		if r.Monitor != protocol.MonitorPull || r.Load == nil || *r.Load != 4 {
			return fmt.Errorf("replica %+v, want pull with load 4", r)
		}
		return nil
	})
	if err := e.b.Drain("mpull", reg.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		if adv := mon.Advisory(); adv.Advisory != protocol.Drain {
			return fmt.Errorf("monitor obeys %+v, want drain", adv)
		}
		return nil
	})
}
