package httpagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startBalancer starts a real balancer over a real store behind the admin
// API, with one per-request group "web" using strategy, and returns the
// admin URL and the balancer.
func startBalancer(t *testing.T, strategy string) (string, *balancer.Balancer) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: quiet, AdminURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.New(b, api.Options{Logger: quiet})
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	if _, _, err := b.PutGroup(protocol.Group{
		Name: "web", FrontDoor: "127.0.0.1:0", Binding: "per-request", Strategy: strategy,
		ReportInterval: protocol.Duration(100 * time.Millisecond),
	}); err != nil {
		t.Fatal(err)
	}
	return srv.URL, b
}

// waitReplica waits until cond holds for the group's only replica,
// looking again at each of the group's events (it steps every report
// interval), for at most 15 s.
func waitReplica(t *testing.T, b *balancer.Balancer, what string, cond func(protocol.ReplicaStatus) bool) protocol.ReplicaStatus {
	t.Helper()
	events, unsubscribe, err := b.Subscribe("web")
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		st, err := b.Group("web")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Replicas) == 1 && cond(st.Replicas[0]) {
			return st.Replicas[0]
		}
		select {
		case _, ok := <-events:
			if !ok {
				t.Fatalf("group web went away while waiting for a replica %s", what)
			}
		case <-ctx.Done():
			raw, _ := json.Marshal(st.Replicas)
			t.Fatalf("no replica %s within 15s; replicas: %s", what, raw)
		}
	}
}

// hammer GETs url from n goroutines until ctx is done and counts the
// answers.
func hammer(ctx context.Context, url string, n int, done *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := hc.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					done.Add(1)
				}
			}
		}()
	}
	return &wg
}

// TestAgentPushesNGINXLoad runs the agent beside a real NGINX, reporting
// to a real balancer: under load the report carries the request rate, the
// CPU of NGINX's master and worker and their utilization (what
// weighted-round-robin-orca weighs); idle, the rate falls to exactly 0
// (the agent's own stub_status reads are not counted); calls through the
// front door reach NGINX; closing the monitor deregisters the replica.
func TestAgentPushesNGINXLoad(t *testing.T) {
	n := startNGINX(t, "")
	admin, b := startBalancer(t, "weighted-round-robin-orca")
	agent, err := httpagent.New(httpagent.Config{
		StubStatus: n.url + "/nginx_status", CPU: httpagent.ProcCPU{Pids: []int{n.pid}},
		Sample: 20 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := agent.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	go agent.Run(ctx)
	mon, err := monitor.NewExternal(monitor.Options{Admin: admin, Group: "web", Address: n.url, Load: monitor.LoadRate, Logger: quiet}, agent.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer mon.Close(context.Background())

	loadCtx, stopLoad := context.WithCancel(ctx)
	var done atomic.Int64
	wg := hammer(loadCtx, n.url+"/1k", 4, &done)
	start := time.Now()
	r := waitReplica(t, b, "reporting NGINX's rate and CPU under load", func(r protocol.ReplicaStatus) bool {
		return r.Metrics[protocol.MetricRPS] > 20 && r.Metrics[protocol.MetricCPU] > 0 && r.Metrics[protocol.MetricUtilization] > 0
	})
	clientRate := float64(done.Load()) / time.Since(start).Seconds()
	if rps := r.Metrics[protocol.MetricRPS]; rps > 3*clientRate+50 {
		t.Errorf("reported rps %.0f, but the clients got %.0f answers/s", rps, clientRate)
	}
	if r.Load == nil || *r.Load != r.Metrics[protocol.MetricRPS] {
		t.Errorf("load %v, want the rps metric %v (--load rate)", r.Load, r.Metrics[protocol.MetricRPS])
	}
	if _, ok := r.Metrics[protocol.MetricLatencyMS]; !ok {
		t.Errorf("no latency estimate under load: %v", r.Metrics)
	}
	if r.Address != n.url {
		t.Errorf("registered address %s, want %s", r.Address, n.url)
	}
	stopLoad()
	wg.Wait()
	waitReplica(t, b, "reporting 0 requests/s once idle", func(r protocol.ReplicaStatus) bool {
		rps, ok := r.Metrics[protocol.MetricRPS]
		return ok && rps == 0 && r.Metrics[protocol.MetricInflight] == 0
	})

	st, _ := b.Group("web")
	resp, err := http.Get(st.Advertise + "/1k")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 1024 {
		t.Fatalf("through the front door: %s, %d bytes", resp.Status, len(body))
	}

	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	if err := mon.Close(cctx); err != nil {
		t.Fatal(err)
	}
	// Deregistered: the balancer drains the replica (no new calls), then
	// forgets it.
	st, _ = b.Group("web")
	if len(st.Replicas) != 0 && st.Replicas[0].State != "draining" {
		t.Fatalf("replica %s after Close, want draining or gone", st.Replicas[0].State)
	}
}

// TestAgentPullAndLoadProbe has the balancer pull the agent's reports and
// prequal probe NGINX's /fulcrum/probe, which NGINX passes to the agent:
// three downloads held open by NGINX's rate limit show as requests in
// flight in both.
func TestAgentPullAndLoadProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	agentURL := "http://" + ln.Addr().String()
	n := startNGINX(t, ln.Addr().String())
	admin, b := startBalancer(t, "prequal")
	agent, err := httpagent.New(httpagent.Config{StubStatus: n.url + "/nginx_status", Sample: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go agent.Run(ctx)
	mon, err := monitor.NewExternal(monitor.Options{
		Admin: admin, Group: "web", Address: n.url, Mode: protocol.MonitorPull,
		PullURL: agentURL + monitor.DefaultPullPath, Load: monitor.LoadInflight, Logger: quiet,
	}, agent.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: agent.Handler(monitor.DefaultPullPath, mon.PullHandler())}
	go srv.Serve(ln)
	defer srv.Close()
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer mon.Close(context.Background())

	// Three downloads NGINX sends at 2 KB/s: in progress for minutes.
	slowCtx, stopSlow := context.WithCancel(ctx)
	defer stopSlow()
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(slowCtx, http.MethodGet, n.url+"/slow/big", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	r := waitReplica(t, b, "pulled with 3 requests in flight", func(r protocol.ReplicaStatus) bool {
		return r.Metrics[protocol.MetricInflight] >= 3
	})
	if r.Monitor != protocol.MonitorPull {
		t.Errorf("monitor %q, want pull", r.Monitor)
	}
	if r.Load == nil || *r.Load < 3 {
		t.Errorf("load %v, want the requests in progress (--load connections)", r.Load)
	}

	// prequal's probe, through NGINX to the agent. A probe's reading can
	// race the agent's sampling reads (their own requests are left out by
	// count, not by identity), so ask until one reading is clean.
	ctx15, cancel15 := context.WithTimeout(ctx, 15*time.Second)
	defer cancel15()
	proctest.Poll(ctx15, t, "a probe answering rif 3", func() (bool, string) {
		resp, err := http.Get(n.url + protocol.ProbePath)
		if err != nil {
			t.Fatal(err)
		}
		var lp protocol.LoadProbe
		err = json.NewDecoder(resp.Body).Decode(&lp)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("probe answer: %v", err)
		}
		return lp.RIF == 3, fmt.Sprintf("%+v", lp) // the probe itself, through NGINX, is not counted
	})

	st, _ := b.Group("web")
	resp, err := http.Get(st.Advertise + "/1k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("through prequal's front door: %s", resp.Status)
	}
	stopSlow()
	wg.Wait()

	// Idle but probed every few milliseconds: the probes NGINX passes on
	// are not clients' requests, so the rate falls to exactly 0.
	probeCtx, stopProbes := context.WithCancel(ctx)
	var probing sync.WaitGroup
	defer probing.Wait()
	defer stopProbes()
	probing.Go(func() {
		pace := time.NewTicker(5 * time.Millisecond) // the probes' pace
		defer pace.Stop()
		for {
			req, _ := http.NewRequestWithContext(probeCtx, http.MethodGet, n.url+protocol.ProbePath, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			select {
			case <-probeCtx.Done():
				return
			case <-pace.C:
			}
		}
	})
	waitReplica(t, b, "reporting 0 requests/s while only probed", func(r protocol.ReplicaStatus) bool {
		rps, ok := r.Metrics[protocol.MetricRPS]
		return ok && rps == 0 && r.Metrics[protocol.MetricInflight] == 0
	})
}

// TestLoadProbeTimesStubStatus: a stub_status page (a real socket) that
// takes 3 ms by the agent's clock to answer, on a replica whose requests
// no reading catches in progress. Little's law reads 0 there; the
// latency estimate is the reads' 3 ms, idle or serving 200 requests/s.
func TestLoadProbeTimesStubStatus(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var requests, perRead atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clock.Advance(3 * time.Millisecond)
		n := requests.Add(1 + perRead.Load()) // this read, and the clients' since the last
		// Writing 1: this read itself, which the agent leaves out.
		fmt.Fprintf(w, "Active connections: 1 \nserver accepts handled requests\n 1 1 %d \nReading: 0 Writing: 1 Waiting: 0 \n", n)
	}))
	defer srv.Close()
	agent, err := httpagent.New(httpagent.Config{StubStatus: srv.URL, Now: clock.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func(n int) {
		for range n {
			if !agent.Sample(ctx) {
				t.Fatal("stub_status read failed")
			}
			clock.Advance(97 * time.Millisecond)
		}
	}
	check := func(what string, lp protocol.LoadProbe, m map[string]float64) {
		t.Helper()
		if math.Abs(lp.LatencyMS-3) > 1e-9 || lp.RIF != 0 {
			t.Errorf("%s: probe %+v, want rif 0 and latency_ms 3", what, lp)
		}
		if got, ok := m[protocol.MetricLatencyMS]; !ok || math.Abs(got-3) > 1e-9 {
			t.Errorf("%s: report %v, want latency_ms 3", what, m)
		}
	}
	read(5)
	agent.Metrics(clock.Now()) // opens the next report window
	read(5)
	check("idle", agent.LoadProbe(ctx), agent.Metrics(clock.Now()))
	if m := agent.Metrics(clock.Now()); len(m) != 0 {
		t.Errorf("a report window without a reading: %v, want nothing", m)
	}

	perRead.Store(20) // 20 requests per 100 ms, none caught in progress
	read(15)
	lp := agent.LoadProbe(ctx)
	m := agent.Metrics(clock.Now())
	if rps := m[protocol.MetricRPS]; rps < 150 || rps > 250 {
		t.Errorf("rps %v, want about 200", rps)
	}
	check("200 requests/s", lp, m)
}
