package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestStartRegistersWithReplaceAndCloseDeregisters(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, func(o *monitor.Options) { o.Weight = 2 })
	reg := rp.start(t)
	if reg.ID != "r1" || reg.Token != "tok-1" {
		t.Fatalf("registered %+v, want id r1 token tok-1", reg)
	}
	regs, _, _ := admin.snapshot()
	if len(regs) != 1 {
		t.Fatalf("got %d registrations, want 1", len(regs))
	}
	want := protocol.Registration{
		Address: rp.srv.URL,
		Weight:  2,
		Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPush},
		Replace: true,
	}
	if got := regs[0]; got.Body != want || got.Auth != "Bearer join-secret" || got.Group != testGroup {
		t.Fatalf("registration %+v, want body %+v with Bearer join-secret in %s", got, want, testGroup)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rp.mon.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, _, dels := admin.snapshot()
	wantDel := deleteCall{Path: "/v1/groups/prime/replicas/r1", Auth: "Bearer tok-1"}
	if len(dels) != 1 || dels[0] != wantDel {
		t.Fatalf("deregistrations %+v, want [%+v]", dels, wantDel)
	}
	if err := rp.mon.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := rp.mon.Start(); !errors.Is(err, monitor.ErrStarted) {
		t.Fatalf("Start after Close: %v, want ErrStarted", err)
	}
}

func TestRegistrationRetriesWithoutBlockingServing(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	admin.regFailures = 3
	rp := newReplica(t, admin, nil)
	if err := rp.mon.Start(); err != nil {
		t.Fatal(err)
	}
	// The balancer refuses; the replica serves meanwhile.
	for range 3 {
		d := rp.clock.waitArmed(t)
		rp.calls(t, "a", true, 1)
		if _, ok := rp.mon.Registered(); ok {
			t.Fatal("registered while the balancer refuses")
		}
		if d <= 0 || d > 10*time.Second {
			t.Fatalf("backoff %v out of (0, 10s]", d)
		}
		rp.clock.Advance(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := rp.mon.WaitRegistered(ctx)
	if err != nil {
		t.Fatal(err)
	}
	regs, _, _ := admin.snapshot()
	if len(regs) != 4 || reg.Token != "tok-1" {
		t.Fatalf("%d registration attempts, token %q; want 4 and tok-1", len(regs), reg.Token)
	}
}

func TestHighSendsNamedClientsBackOncePerEpoch(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	rp.calls(t, "a", true, 2)
	rp.calls(t, "b", true, 1)
	rp.calls(t, "plain", false, 1)

	admin.setAdvisory(protocol.Advisory{Advisory: protocol.High, Shed: 1, Epoch: 1, Clients: []string{"a", "plain"}})
	rp.reportNow(t, time.Second)

	code, h := rp.call(t, "a", true, "/prime/7?verbose=1&x=%2F")
	if code != http.StatusTemporaryRedirect {
		t.Fatalf("a under high: status %d, want 307", code)
	}
	if got, want := h.Get("Location"), admin.frontDoor+"/prime/7?verbose=1&x=%2F"; got != want {
		t.Fatalf("Location %q, want %q", got, want)
	}
	if h.Get(protocol.HeaderRebind) != "1" {
		t.Fatalf("rebind header %q, want 1", h.Get(protocol.HeaderRebind))
	}
	if rp.ran("a") != 2 {
		t.Fatalf("the redirected call ran: a ran %d calls, want 2", rp.ran("a"))
	}
	rp.calls(t, "a", true, 2) // once per epoch: served from now on
	rp.calls(t, "b", true, 1)
	rp.calls(t, "plain", false, 2) // named, but not bound: never redirected

	// The same advisory again is the same epoch: no more redirects.
	rp.reportNow(t, time.Second)
	rp.calls(t, "a", true, 1)

	// A new epoch sends a back once more, exactly once among concurrent
	// calls.
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.High, Shed: 1, Epoch: 2, Clients: []string{"a"}})
	rp.reportNow(t, time.Second)
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, rp.srv.URL+"/prime/7", nil)
			req.Header.Set(protocol.HeaderClient, "a")
			req.Header.Set(protocol.HeaderBinding, testGroup+"/r1")
			resp, err := noRedirects.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	redirected := 0
	for c := range codes {
		if c == http.StatusTemporaryRedirect {
			redirected++
		}
	}
	if redirected != 1 {
		t.Fatalf("%d of 20 concurrent calls redirected in a new epoch, want 1", redirected)
	}
	if st := rp.mon.Stats(); st.Rebinds != 2 {
		t.Fatalf("Stats.Rebinds = %d, want 2", st.Rebinds)
	}

	admin.setAdvisory(protocol.Advisory{Advisory: protocol.Nominal, Epoch: 3})
	rp.reportNow(t, time.Second)
	if got := rp.mon.Advisory().Advisory; got != protocol.Nominal {
		t.Fatalf("advisory %q after nominal", got)
	}
}

func TestShedByRateSendsBusiestClientsBack(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	rp.calls(t, "a", true, 50)
	rp.calls(t, "b", true, 30)
	rp.calls(t, "c", true, 10)
	rp.calls(t, "d", true, 5)
	rp.calls(t, "plain", false, 20)

	admin.setAdvisory(protocol.Advisory{Advisory: protocol.High, Shed: 80, Epoch: 7})
	rp.reportNow(t, time.Second)

	_, reps, _ := admin.snapshot()
	rep := reps[len(reps)-1].Report
	if rep.Load != 115 || rep.Metrics[protocol.MetricRPS] != 115 {
		t.Fatalf("load %v rps %v, want 115 calls/s", rep.Load, rep.Metrics[protocol.MetricRPS])
	}
	wantClients := []protocol.ClientRate{{ID: "a", Rate: 50}, {ID: "b", Rate: 30}, {ID: "c", Rate: 10}, {ID: "d", Rate: 5}}
	if !slices.Equal(rep.Clients, wantClients) {
		t.Fatalf("clients %v, want %v", rep.Clients, wantClients)
	}
	for _, tc := range []struct {
		client string
		bound  bool
		want   int
	}{
		{"a", true, http.StatusTemporaryRedirect},
		{"b", true, http.StatusTemporaryRedirect},
		{"c", true, http.StatusOK},
		{"d", true, http.StatusOK},
		{"plain", false, http.StatusOK},
		{"a", true, http.StatusOK},
	} {
		if code, _ := rp.call(t, tc.client, tc.bound, "/prime/7"); code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.client, code, tc.want)
		}
	}
}

func TestTopClientsBoundsTheReport(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, func(o *monitor.Options) { o.TopClients = 2 })
	rp.start(t)
	rp.calls(t, "a", true, 3)
	rp.calls(t, "b", true, 2)
	rp.calls(t, "c", true, 1)
	rp.reportNow(t, 2*time.Second)
	_, reps, _ := admin.snapshot()
	want := []protocol.ClientRate{{ID: "a", Rate: 1.5}, {ID: "b", Rate: 1}}
	if got := reps[len(reps)-1].Report.Clients; !slices.Equal(got, want) {
		t.Fatalf("clients %v, want %v", got, want)
	}
}

func TestDrainSendsEveryBoundClientBack(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	rp.calls(t, "a", true, 1)
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.Drain, Epoch: 4})
	rp.reportNow(t, time.Second)
	for _, client := range []string{"a", "a", "b", "new", ""} {
		if code, h := rp.call(t, client, true, "/x"); code != http.StatusTemporaryRedirect || h.Get(protocol.HeaderRebind) != "1" {
			t.Fatalf("bound %q under drain: status %d rebind %q, want 307 and 1", client, code, h.Get(protocol.HeaderRebind))
		}
	}
	rp.calls(t, "plain", false, 3)

	// A binding in another group is not ours to send back.
	req, _ := http.NewRequest(http.MethodGet, rp.srv.URL+"/x", nil)
	req.Header.Set(protocol.HeaderBinding, "other/r9")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("binding of another group: status %d, want 200", resp.StatusCode)
	}
	if rp.ran("a") != 1 {
		t.Fatalf("a ran %d calls under drain, want only the one before", rp.ran("a"))
	}
}

func TestPullHandlerAnswersReportsAndAppliesAdvisory(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, func(o *monitor.Options) {
		o.Mode = protocol.MonitorPull
		o.Interval = 2 * time.Second
	})
	rp.start(t)
	regs, _, _ := admin.snapshot()
	wantSpec := protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: rp.srv.URL + monitor.DefaultPullPath, Interval: protocol.Duration(2 * time.Second)}
	if got := regs[0].Body.Monitor; got != wantSpec {
		t.Fatalf("monitor spec %+v, want %+v", got, wantSpec)
	}
	if _, err := rp.mon.ReportNow(context.Background()); !errors.Is(err, monitor.ErrPullMode) {
		t.Fatalf("ReportNow in pull mode: %v, want ErrPullMode", err)
	}

	rp.calls(t, "a", true, 4)
	rp.calls(t, "b", true, 2)
	rp.clock.Advance(2 * time.Second)
	adv := protocol.Advisory{Advisory: protocol.High, Shed: 1, Epoch: 9, Clients: []string{"b"}, ReportInterval: protocol.Duration(3 * time.Second)}
	rep := pull(t, rp, adv)
	if rep.Load != 3 || rep.Metrics[protocol.MetricRPS] != 3 {
		t.Fatalf("pulled load %v rps %v, want 3", rep.Load, rep.Metrics[protocol.MetricRPS])
	}
	if want := []protocol.ClientRate{{ID: "a", Rate: 2}, {ID: "b", Rate: 1}}; !slices.Equal(rep.Clients, want) {
		t.Fatalf("pulled clients %v, want %v", rep.Clients, want)
	}
	if code, _ := rp.call(t, "b", true, "/"); code != http.StatusTemporaryRedirect {
		t.Fatalf("b after a pull with high: status %d, want 307", code)
	}
	rp.calls(t, "a", true, 1)
	if got := rp.mon.Interval(); got != 3*time.Second {
		t.Fatalf("interval %v, want the advisory's 3s", got)
	}

	// Pulls are not calls.
	rp.clock.Advance(time.Second)
	rep = pull(t, rp, protocol.Advisory{Advisory: protocol.Nominal, Epoch: 10})
	if rep.Metrics[protocol.MetricRPS] != 1 { // the one call of a
		t.Fatalf("rps %v after one call, want 1", rep.Metrics[protocol.MetricRPS])
	}

	resp, err := http.Post(rp.srv.URL+monitor.DefaultPullPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST to the pull endpoint: %d, want 405", resp.StatusCode)
	}
}

func pull(t *testing.T, rp *replica, adv protocol.Advisory) protocol.Report {
	t.Helper()
	header, err := json.Marshal(adv)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, rp.srv.URL+monitor.DefaultPullPath, nil)
	req.Header.Set(protocol.HeaderAdvisory, string(header))
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pull: status %d: %s", resp.StatusCode, body)
	}
	rep, err := protocol.DecodeReport(body)
	if err != nil {
		t.Fatalf("pull answered an invalid report: %v: %s", err, body)
	}
	return rep
}

func TestReregistersWhenTheTokenIsRejected(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	rp.reportNow(t, time.Second)
	admin.revokeTokens() // the balancer lost or revoked the token
	rp.reportNow(t, time.Second)

	regs, reps, _ := admin.snapshot()
	if len(regs) != 2 || !regs[1].Body.Replace {
		t.Fatalf("registrations %+v, want a second one with replace", regs)
	}
	if len(reps) != 2 || reps[0].Token != "tok-1" || reps[1].Token != "tok-2" {
		t.Fatalf("reports %+v, want tok-1 then tok-2", reps)
	}
	if reg, _ := rp.mon.Registered(); reg.Token != "tok-2" {
		t.Fatalf("token %q, want tok-2", reg.Token)
	}
}

func TestPushLoopAdoptsTheBalancersInterval(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	admin.reportInterval = 250 * time.Millisecond
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.Nominal, ReportInterval: protocol.Duration(2 * time.Second)})
	rp := newReplica(t, admin, nil)
	rp.start(t)
	if d := rp.clock.waitArmed(t); d != 250*time.Millisecond {
		t.Fatalf("first report in %v, want the registration's 250ms", d)
	}
	rp.calls(t, "a", true, 1)
	rp.clock.Advance(250 * time.Millisecond)
	select {
	case rc := <-admin.reported:
		if rc.Report.Load != 4 { // one call in 250ms
			t.Fatalf("pushed load %v, want 4 calls/s", rc.Report.Load)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no report pushed")
	}
	if d := rp.clock.waitArmed(t); d != 2*time.Second {
		t.Fatalf("next report in %v, want the advisory's 2s", d)
	}
}

func TestTokenGivenSkipsRegistration(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	admin.tokens["operator-token"] = true
	rp := newReplica(t, admin, func(o *monitor.Options) {
		o.Token = "operator-token"
		o.FrontDoor = "http://fd.example"
		o.JoinToken = ""
		o.Interval = time.Hour // no registration answer to adopt one from
	})
	rp.start(t)
	rp.calls(t, "a", true, 1)
	admin.setAdvisory(protocol.Advisory{Advisory: protocol.High, Epoch: 1, Clients: []string{"a"}})
	rp.reportNow(t, time.Second)
	if code, h := rp.call(t, "a", true, "/q"); code != http.StatusTemporaryRedirect || h.Get("Location") != "http://fd.example/q" {
		t.Fatalf("status %d Location %q, want 307 to http://fd.example/q", code, h.Get("Location"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rp.mon.Close(ctx); err != nil {
		t.Fatal(err)
	}
	regs, reps, dels := admin.snapshot()
	if len(regs) != 0 || len(dels) != 0 || len(reps) != 1 || reps[0].Token != "operator-token" {
		t.Fatalf("registrations %v deletes %v reports %v; want only a report with the given token", regs, dels, reps)
	}
}

func TestLoadSources(t *testing.T) {
	t.Parallel()
	t.Run("inflight", func(t *testing.T) {
		t.Parallel()
		admin := newFakeAdmin(t)
		rp := newReplica(t, admin, func(o *monitor.Options) { o.Load = monitor.LoadInflight })
		entered, release := make(chan struct{}), make(chan struct{})
		rp.setDuring(func(r *http.Request) {
			if r.URL.Path == "/slow" {
				close(entered)
				<-release
			}
		})
		rp.start(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.Get(rp.srv.URL + "/slow")
			if err == nil {
				resp.Body.Close()
			}
		}()
		<-entered
		rp.reportNow(t, time.Second)
		close(release)
		<-done
		_, reps, _ := admin.snapshot()
		rep := reps[len(reps)-1].Report
		if rep.Load != 1 || rep.Metrics[protocol.MetricInflight] != 1 {
			t.Fatalf("load %v inflight %v, want 1", rep.Load, rep.Metrics[protocol.MetricInflight])
		}
	})
	t.Run("latency", func(t *testing.T) {
		t.Parallel()
		admin := newFakeAdmin(t)
		rp := newReplica(t, admin, func(o *monitor.Options) { o.Load = monitor.LoadLatency })
		rp.setDuring(func(*http.Request) { rp.clock.Advance(20 * time.Millisecond) })
		rp.start(t)
		rp.calls(t, "a", true, 3)
		rp.reportNow(t, time.Second)
		rp.setDuring(nil)
		_, reps, _ := admin.snapshot()
		rep := reps[len(reps)-1].Report
		if rep.Load != 20 || rep.Metrics[protocol.MetricLatencyMS] != 20 {
			t.Fatalf("load %v latency %v, want 20ms", rep.Load, rep.Metrics[protocol.MetricLatencyMS])
		}
	})
	t.Run("cpu", func(t *testing.T) {
		t.Parallel()
		admin := newFakeAdmin(t)
		rp := newReplica(t, admin, func(o *monitor.Options) { o.Load = monitor.LoadCPU })
		rp.start(t)
		rp.reportNow(t, time.Second)
		_, reps, _ := admin.snapshot()
		rep := reps[len(reps)-1].Report
		cpu, ok := rep.Metrics[protocol.MetricCPU]
		if !ok || cpu < 0 || cpu > 1 || rep.Load != cpu {
			t.Fatalf("cpu %v (present %v), load %v; want a share in [0,1] as the load", cpu, ok, rep.Load)
		}
	})
	t.Run("func", func(t *testing.T) {
		t.Parallel()
		admin := newFakeAdmin(t)
		var mu sync.Mutex
		value := 42.0
		rp := newReplica(t, admin, func(o *monitor.Options) {
			o.LoadFunc = func() float64 { mu.Lock(); defer mu.Unlock(); return value }
		})
		rp.start(t)
		rp.reportNow(t, time.Second)
		mu.Lock()
		value = math.NaN()
		mu.Unlock()
		rp.reportNow(t, time.Second)
		mu.Lock()
		value = 1e300
		mu.Unlock()
		rp.reportNow(t, time.Second)
		_, reps, _ := admin.snapshot()
		if reps[0].Report.Load != 42 || reps[1].Report.Load != 0 {
			t.Fatalf("loads %v, %v; want 42 then 0 for NaN", reps[0].Report.Load, reps[1].Report.Load)
		}
		if reps[2].Report.Load != protocol.MaxLoad {
			t.Fatalf("load %v for 1e300, want protocol.MaxLoad (the balancer refuses more)", reps[2].Report.Load)
		}
	})
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	valid := monitor.Options{Admin: "http://127.0.0.1:7070", Group: "g", Address: "http://127.0.0.1:9001"}
	tests := []struct {
		name string
		edit func(*monitor.Options)
	}{
		{"no admin", func(o *monitor.Options) { o.Admin = "" }},
		{"no group", func(o *monitor.Options) { o.Group = "" }},
		{"no address", func(o *monitor.Options) { o.Address = "" }},
		{"relative address", func(o *monitor.Options) { o.Address = "127.0.0.1:9001" }},
		{"admin with query", func(o *monitor.Options) { o.Admin = "http://x/?a=1" }},
		{"bad mode", func(o *monitor.Options) { o.Mode = "poll" }},
		{"bad load", func(o *monitor.Options) { o.Load = "memory" }},
		{"load and func", func(o *monitor.Options) { o.Load = monitor.LoadCPU; o.LoadFunc = func() float64 { return 0 } }},
		{"negative weight", func(o *monitor.Options) { o.Weight = -1 }},
		{"negative interval", func(o *monitor.Options) { o.Interval = -time.Second }},
		{"too many top clients", func(o *monitor.Options) { o.TopClients = protocol.MaxReportClients + 1 }},
		{"negative CPUs", func(o *monitor.Options) { o.CPUs = -0.5 }},
		{"NaN CPUs", func(o *monitor.Options) { o.CPUs = math.NaN() }},
		{"too many CPUs", func(o *monitor.Options) { o.CPUs = 2e6 }},
		{"push with token but no admin", func(o *monitor.Options) { o.Token = "t"; o.Admin = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := valid
			tc.edit(&o)
			if _, err := monitor.New(o); !errors.Is(err, monitor.ErrInvalidOptions) {
				t.Fatalf("New: %v, want ErrInvalidOptions", err)
			}
		})
	}
	if _, err := monitor.New(valid); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	pullWithToken := monitor.Options{Token: "t", Mode: protocol.MonitorPull}
	if _, err := monitor.New(pullWithToken); err != nil {
		t.Fatalf("pull mode with a token needs nothing else: %v", err)
	}
}

// TestProbesAndOverlongClientIDsAreNotLoad: the balancer's health probes
// run but are not counted, and a client id too long for a report is not
// listed (so it cannot make every report fail validation).
func TestProbesAndOverlongClientIDsAreNotLoad(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	for range 4 {
		req, err := http.NewRequest(http.MethodGet, rp.srv.URL+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(protocol.HeaderProbe, "1")
		resp, err := noRedirects.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("probe: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	long := strings.Repeat("x", protocol.MaxClientIDLength+1)
	rp.calls(t, long, true, 2)
	rp.calls(t, "a", true, 2)
	rp.reportNow(t, time.Second)
	_, reps, _ := admin.snapshot()
	last := reps[len(reps)-1].Report
	if last.Metrics[protocol.MetricRPS] != 4 || last.Load != 4 {
		t.Errorf("load %v rps %v, want 4 (the four client calls, not the probes)", last.Load, last.Metrics[protocol.MetricRPS])
	}
	if want := []protocol.ClientRate{{ID: "a", Rate: 2}}; !slices.Equal(last.Clients, want) {
		t.Errorf("clients %v, want %v", last.Clients, want)
	}
	if err := last.Validate(); err != nil {
		t.Errorf("report does not validate: %v", err)
	}
}
