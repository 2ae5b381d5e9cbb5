package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// FanIn is the fan-in phase's result: Replicas simulated replicas in
// Groups groups, replica i registered at and reporting to instance i mod
// 3, measured over one window per report interval.
type FanIn struct {
	Replicas int           `json:"replicas"`
	Groups   int           `json:"groups"`
	Windows  []FanInWindow `json:"windows"`
	// FulcrumWritesMetric names fulcrum's own etcd-writes counter, empty
	// when this fulcrum has none.
	FulcrumWritesMetric string `json:"fulcrum_writes_metric,omitempty"`
	// RegistrationEtcdWrites are the proposals etcd committed while the
	// replicas registered: at least one per registration, which shows
	// that the count sees fulcrum's writes.
	RegistrationEtcdWrites float64 `json:"registration_etcd_writes"`
}

// FanInWindow is one measurement window at one report interval.
type FanInWindow struct {
	IntervalMS       int64   `json:"report_interval_ms"`
	Seconds          float64 `json:"seconds"`
	Reports          int64   `json:"reports"`
	ReportsPerSecond float64 `json:"reports_per_second"`
	Errors           int64   `json:"errors"`
	FirstError       string  `json:"first_error,omitempty"`
	LatencyP50MS     float64 `json:"report_latency_p50_ms"`
	LatencyP99MS     float64 `json:"report_latency_p99_ms"`
	LatencyMaxMS     float64 `json:"report_latency_max_ms"`
	// InstanceCPUUSPerReport is the three instances' CPU time together
	// per report, from /proc.
	InstanceCPUUSPerReport *float64 `json:"instance_cpu_us_per_report,omitempty"`
	// EtcdWritesPerSecond is etcd's committed proposals per second (the
	// members' largest count).
	EtcdWritesPerSecond float64 `json:"etcd_writes_per_second"`
	// FulcrumWritesPerSecond is fulcrum's own count, when it has one.
	FulcrumWritesPerSecond *float64 `json:"fulcrum_etcd_writes_per_second,omitempty"`
}

// simReplica is one simulated replica: its registration and load. Used
// by one goroutine at a time.
type simReplica struct {
	group string
	reg   protocol.Registered
	at    *instance
	load  *walk
	// to is where it reports: its instance's /v1/report, or where a 307
	// sent it, until that fails (as the monitor library does).
	to string
}

// measureFanIn registers replicas in groups groups and measures a window
// of window at each report interval.
func measureFanIn(ctx context.Context, env *bench.Env, ins []*instance, etcd []*etcdMember, replicas, groups int, window time.Duration, intervals []time.Duration) (FanIn, error) {
	out := FanIn{Replicas: replicas, Groups: groups}
	for g := range groups {
		if _, err := createGroup(ctx, ins[0], ins, fmt.Sprintf("fanin-%d", g), map[string]any{"binding": "per-request", "report_interval": "500ms"}); err != nil {
			return out, err
		}
	}
	scrapeHC := &http.Client{Timeout: 5 * time.Second}
	before, err := etcdProposals(ctx, scrapeHC, etcd)
	if err != nil {
		return out, err
	}
	sims, err := registerAll(ctx, ins, replicas, groups)
	if err != nil {
		return out, err
	}
	after, err := etcdProposals(ctx, scrapeHC, etcd)
	if err != nil {
		return out, err
	}
	out.RegistrationEtcdWrites = after - before
	env.Logf("fan-in: %d replicas registered in %d groups (%.0f etcd writes)", replicas, groups, out.RegistrationEtcdWrites)
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, every := range intervals {
		w, names, err := fanInWindow(ctx, hc, ins, etcd, sims, every, window)
		if err != nil {
			return out, err
		}
		if len(names) > 0 {
			out.FulcrumWritesMetric = names[0]
		}
		env.Logf("fan-in every %s: %.0f reports/s, p99 %.1f ms, %d errors, etcd %.1f writes/s", every, w.ReportsPerSecond, w.LatencyP99MS, w.Errors, w.EtcdWritesPerSecond)
		out.Windows = append(out.Windows, w)
	}
	return out, nil
}

// registerAll registers n simulated replicas (addresses nothing listens
// on), replica i in group i mod groups at instance i mod 3, eight at a
// time.
func registerAll(ctx context.Context, ins []*instance, n, groups int) ([]*simReplica, error) {
	sims := make([]*simReplica, n)
	errs := make([]error, n)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				at := ins[i%len(ins)]
				group := fmt.Sprintf("fanin-%d", i%groups)
				reg, err := register(ctx, at, group, fmt.Sprintf("http://127.0.3.%d:%d", 1+i%250, 10000+i))
				errs[i] = err
				sims[i] = &simReplica{group: group, reg: reg, at: at, load: newWalk(rand.New(rand.NewPCG(uint64(i), 2026)), 0.05)}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sims, ctx.Err()
}

// fanInWindow runs every simulated replica reporting every interval,
// waits two intervals for the steady state, then measures for window.
func fanInWindow(ctx context.Context, hc *http.Client, ins []*instance, etcd []*etcdMember, sims []*simReplica, every, window time.Duration) (FanInWindow, []string, error) {
	w := FanInWindow{IntervalMS: every.Milliseconds()}
	run, stop := context.WithCancel(ctx)
	defer stop()
	var (
		measuring atomic.Bool
		reports   atomic.Int64
		mu        sync.Mutex
		rec       = stats.NewRecorder()
		errCount  atomic.Int64
		firstErr  atomic.Value
	)
	var wg sync.WaitGroup
	for i, s := range sims {
		offset := time.Duration(int64(every) * int64(i) / int64(len(sims)))
		wg.Go(func() {
			if !pause(run, offset) {
				return
			}
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				t0 := time.Now()
				err := report(run, hc, s)
				d := time.Since(t0)
				if run.Err() != nil {
					return
				}
				if measuring.Load() {
					reports.Add(1)
					if err != nil {
						errCount.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					} else {
						mu.Lock()
						rec.Record(d)
						mu.Unlock()
					}
				}
				select {
				case <-run.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	defer wg.Wait()
	if !pause(ctx, 2*every+time.Second) {
		return w, nil, ctx.Err()
	}
	scrapeHC := &http.Client{Timeout: 5 * time.Second}
	props0, err := etcdProposals(ctx, scrapeHC, etcd)
	if err != nil {
		return w, nil, err
	}
	writes0, names, err := fulcrumEtcdWrites(ctx, scrapeHC, ins)
	if err != nil {
		return w, nil, err
	}
	cpu0 := instancesCPU(ins)
	began := time.Now()
	measuring.Store(true)
	if !pause(ctx, window) {
		return w, nil, ctx.Err()
	}
	measuring.Store(false)
	secs := time.Since(began).Seconds()
	cpu1 := instancesCPU(ins)
	props1, err := etcdProposals(ctx, scrapeHC, etcd)
	if err != nil {
		return w, nil, err
	}
	writes1, _, err := fulcrumEtcdWrites(ctx, scrapeHC, ins)
	if err != nil {
		return w, nil, err
	}
	stop()
	wg.Wait()

	w.Seconds, w.Reports, w.Errors = secs, reports.Load(), errCount.Load()
	if v, ok := firstErr.Load().(string); ok {
		w.FirstError = v
	}
	w.ReportsPerSecond = float64(w.Reports) / secs
	if rec.Count() > 0 {
		w.LatencyP50MS = rec.Percentile(50) / 1000
		w.LatencyP99MS = rec.Percentile(99) / 1000
		w.LatencyMaxMS = rec.Summary().Max / 1000
	}
	if cpu0 >= 0 && cpu1 >= cpu0 && w.Reports > 0 {
		v := float64(cpu1-cpu0) / float64(time.Microsecond) / float64(w.Reports)
		w.InstanceCPUUSPerReport = &v
	}
	w.EtcdWritesPerSecond = (props1 - props0) / secs
	if len(names) > 0 {
		v := (writes1 - writes0) / secs
		w.FulcrumWritesPerSecond = &v
	}
	return w, names, nil
}

// instancesCPU is the instances' CPU time together, -1 when unknown.
func instancesCPU(ins []*instance) time.Duration {
	var sum time.Duration
	for _, in := range ins {
		t, ok := in.proc.CPUTime()
		if !ok {
			return -1
		}
		sum += t
	}
	return sum
}

// report POSTs one report of s with its token and reads the advisory. A
// 307 (a non-leader sending it to the leader) is followed once, with the
// token, and later reports go there until one fails, as the monitor
// library does.
func report(ctx context.Context, hc *http.Client, s *simReplica) error {
	body, err := json.Marshal(protocol.Report{Load: s.load.next()})
	if err != nil {
		return err
	}
	home := s.at.admin + "/v1/report"
	if s.to == "" {
		s.to = home
	}
	err = reportTo(ctx, hc, s, body)
	if err != nil && s.to != home {
		s.to = home
	}
	return err
}

// reportTo sends body to s.to, following one 307 (and staying there).
func reportTo(ctx context.Context, hc *http.Client, s *simReplica, body []byte) error {
	url := s.to
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.reg.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return err
		}
		switch {
		case resp.StatusCode == http.StatusTemporaryRedirect && hop == 0 && resp.Header.Get("Location") != "":
			url = resp.Header.Get("Location")
			s.to = url
			continue
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("report to %s: status %d: %s", url, resp.StatusCode, bytes.TrimSpace(raw))
		}
		var adv protocol.Advisory
		return json.Unmarshal(raw, &adv)
	}
}
