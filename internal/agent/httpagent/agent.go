package httpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// DefaultSample is how often the agent reads stub_status and the CPU time
// when Config.Sample is not set.
const DefaultSample = 100 * time.Millisecond

// probeWindow is how far back the latency estimate of a load probe looks.
const probeWindow = time.Second

// ringSize bounds the readings kept for the load probes' latency window.
const ringSize = 64

// maxStubBytes bounds a stub_status page (a real one is ~100 bytes).
const maxStubBytes = 4 << 10

// Config configures an Agent. At least one of StubStatus and CPU is set.
type Config struct {
	// StubStatus is the URL of NGINX's stub_status page, e.g.
	// "http://127.0.0.1:8080/nginx_status". Empty: no request metrics
	// (rps, inflight, latency_ms).
	StubStatus string
	// CPU reads the replica's CPU time; nil: no cpu and utilization
	// metrics.
	CPU CPUSource
	// Pool, with CPU, reads the CPU time of everything that shares the
	// replica's cores, the replica included (its cgroup): the agent then
	// reports cpu_other, Pool's time beyond CPU's as a share of Cores.
	// Nil: no cpu_other.
	Pool CPUSource
	// Cores is the CPU capacity the cpu metric is a share of; default the
	// machine's cores.
	Cores float64
	// Sample is how often the agent reads its sources; default
	// DefaultSample. The latency estimate averages the requests in
	// progress over these readings.
	Sample time.Duration
	// HTTPClient reads stub_status; default a client with a 1s timeout.
	HTTPClient *http.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Agent reads an unmodified HTTP replica's load from outside: the CPU time
// of its processes or cgroup and NGINX's stub_status counters. Its Metrics
// feed a monitor made with monitor.NewExternal, and it answers the
// balancer's load probes (strategy prequal). Safe for concurrent use.
type Agent struct {
	cfg Config
	log *slog.Logger

	// ownStarted counts the requests NGINX saw that are the agent's,
	// not clients': its stub_status reads and the load probes NGINX
	// passed to it (counted when they reach the agent: NGINX has counted
	// them by then). ownInflight counts those not answered yet (NGINX
	// counts them as reading or writing).
	ownStarted  atomic.Int64
	ownInflight atomic.Int64

	mu      sync.Mutex
	latest  snapshot   // guarded by mu
	window  snapshot   // start of the current report window; guarded by mu
	ring    []snapshot // recent readings, oldest first; guarded by mu
	stubErr bool       // the last stub_status read failed (logged once); guarded by mu
	cpuErr  bool       // likewise for the CPU time; guarded by mu
	poolErr bool       // likewise for the pool's; guarded by mu
}

// snapshot is the agent's cumulative view at a reading.
type snapshot struct {
	// stubAt is the time of the last stub_status reading (zero: none).
	stubAt time.Time
	// requests is NGINX's request counter less the agent's own requests.
	requests int64
	// inprog is the requests in progress at stubAt, the agent's excluded.
	inprog int64
	// sumInprog and readings add up inprog over every reading, and
	// sumRTT the time each stub_status read took, from sending the
	// request to reading the whole page.
	sumInprog float64
	readings  int64
	sumRTT    time.Duration
	// cpuAt is the time of the last CPU reading (zero: none), cpu the
	// CPU time then, and pool the pool's CPU time then (poolOK: it was
	// read at cpuAt).
	cpuAt  time.Time
	cpu    time.Duration
	pool   time.Duration
	poolOK bool
}

// New checks cfg and returns an agent. It reads nothing until Sample or
// Run.
func New(cfg Config) (*Agent, error) {
	if cfg.StubStatus == "" && cfg.CPU == nil {
		return nil, errors.New("httpagent: nothing to measure: give a stub_status URL, processes or a cgroup")
	}
	if cfg.Pool != nil && cfg.CPU == nil {
		return nil, errors.New("httpagent: a pool of CPU (the replica's cgroup) needs the replica's own CPU source (its processes) to tell other work from it")
	}
	if cfg.StubStatus != "" {
		u, err := url.Parse(cfg.StubStatus)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &protocol.FieldError{Field: "stub-status", Value: cfg.StubStatus, Allowed: "must be an absolute http:// or https:// URL"}
		}
	}
	if cfg.Cores == 0 {
		cfg.Cores = float64(runtime.NumCPU())
	}
	if !(cfg.Cores > 0) || cfg.Cores > 1e5 {
		return nil, &protocol.FieldError{Field: "cpus", Value: cfg.Cores, Allowed: "must be a number of cores > 0"}
	}
	if cfg.Sample == 0 {
		cfg.Sample = DefaultSample
	}
	if cfg.Sample < time.Millisecond || cfg.Sample > time.Minute {
		return nil, &protocol.FieldError{Field: "sample", Value: cfg.Sample.String(), Allowed: "must be in [1ms, 1m]"}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Agent{cfg: cfg, log: cfg.Logger.With("component", "agent")}, nil
}

// Run reads the sources every Config.Sample until ctx is done.
func (a *Agent) Run(ctx context.Context) {
	t := time.NewTicker(a.cfg.Sample)
	defer t.Stop()
	for {
		a.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample reads every source once now and reports whether all of them
// answered. Failures are logged once until the source answers again.
func (a *Agent) Sample(ctx context.Context) bool {
	ok := true
	if a.cfg.StubStatus != "" {
		ok = a.readStub(ctx, true) == nil
	}
	if a.cfg.CPU != nil {
		ok = a.readCPU() == nil && ok
	}
	return ok
}

// Ready reads every source once and returns the first failure: whether
// the agent can measure the replica at all.
func (a *Agent) Ready(ctx context.Context) error {
	if a.cfg.StubStatus != "" {
		if err := a.readStub(ctx, true); err != nil {
			return err
		}
	}
	if a.cfg.CPU != nil {
		return a.readCPU()
	}
	return nil
}

// readStub reads stub_status once. logged says a failure is logged (the
// sampling loop's); a load probe's read that fails (its short deadline
// passed) is not: the sampling loop's reads tell whether NGINX answers.
func (a *Agent) readStub(ctx context.Context, logged bool) error {
	a.ownStarted.Add(1)
	a.ownInflight.Add(1)
	sent := a.cfg.Now()
	st, err := a.fetchStub(ctx)
	own, ownInflight := a.ownStarted.Load(), a.ownInflight.Load()
	a.ownInflight.Add(-1)
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if logged && !a.stubErr {
			a.stubErr = true
			a.log.Warn("reading stub_status failed; request metrics are left out until it answers", "url", a.cfg.StubStatus, "err", err)
		}
		return err
	}
	if a.stubErr {
		a.stubErr = false
		a.log.Info("stub_status answers again", "url", a.cfg.StubStatus)
	}
	s := a.latest
	s.stubAt = now
	// The agent's own requests so far, this one included, are in NGINX's
	// counter. A window over which it went back (NGINX restarted) has no
	// rate.
	s.requests = st.Requests - own
	s.inprog = max(st.InProgress()-ownInflight, 0)
	s.sumInprog += float64(s.inprog)
	s.sumRTT += max(now.Sub(sent), 0)
	s.readings++
	a.pushLocked(s)
	return nil
}

func (a *Agent) fetchStub(ctx context.Context) (StubStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.StubStatus, nil)
	if err != nil {
		return StubStatus{}, err
	}
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return StubStatus{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStubBytes))
	if err != nil {
		return StubStatus{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return StubStatus{}, fmt.Errorf("stub_status: %s answered %s", a.cfg.StubStatus, resp.Status)
	}
	return ParseStubStatus(body)
}

func (a *Agent) readCPU() error {
	used, err := a.cfg.CPU.Usage()
	var pool time.Duration
	var poolErr error
	if a.cfg.Pool != nil {
		pool, poolErr = a.cfg.Pool.Usage()
	}
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.Pool != nil {
		switch {
		case poolErr != nil && !a.poolErr:
			a.poolErr = true
			a.log.Warn("reading the pool's CPU time failed; cpu_other is left out until it answers", "source", a.cfg.Pool.String(), "err", poolErr)
		case poolErr == nil && a.poolErr:
			a.poolErr = false
			a.log.Info("the pool's CPU time is readable again", "source", a.cfg.Pool.String())
		}
	}
	if err != nil {
		if !a.cpuErr {
			a.cpuErr = true
			a.log.Warn("reading CPU time failed; cpu is left out until it answers", "source", a.cfg.CPU.String(), "err", err)
		}
		return err
	}
	if a.cpuErr {
		a.cpuErr = false
		a.log.Info("CPU time readable again", "source", a.cfg.CPU.String())
	}
	s := a.latest
	s.cpuAt, s.cpu = now, used
	s.pool, s.poolOK = pool, a.cfg.Pool != nil && poolErr == nil
	a.pushLocked(s)
	return nil
}

// pushLocked makes s the latest reading and keeps it for the probes'
// window. Caller must hold a.mu.
func (a *Agent) pushLocked(s snapshot) {
	if a.window.stubAt.IsZero() && a.window.cpuAt.IsZero() {
		a.window = s // the first reading opens the first window
	}
	a.latest = s
	if len(a.ring) == ringSize {
		copy(a.ring, a.ring[1:])
		a.ring = a.ring[:ringSize-1]
	}
	a.ring = append(a.ring, s)
}

// Metrics closes the report window: the replica's metrics since the
// previous call (protocol.Metric* keys), from the latest readings. It is
// a monitor.ExternalMetrics.
func (a *Agent) Metrics(time.Time) map[string]float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := windowMetrics(a.window, a.latest, a.cfg.Cores)
	if !a.latest.stubAt.IsZero() || !a.latest.cpuAt.IsZero() {
		a.window = a.latest
	}
	return m
}

// windowMetrics are the metrics between two snapshots: rps (requests/s,
// the agent's own left out), inflight (requests in progress at the end),
// latency_ms, cpu and utilization (the CPU time used as a share of cores)
// and cpu_other (the pool's CPU time beyond the replica's, as a share of
// cores). A metric whose sources were not read in the window is left out.
//
// latency_ms is the larger of two estimates of the time a request spends
// in NGINX. Little's law gives the clients' requests' mean: the mean
// requests in progress over the window's readings divided by the request
// rate. But the readings are snapshots 100 ms apart, and a replica that
// answers a small file in a fraction of a millisecond is seen with a
// request in progress in almost none of them, so at low rates the law
// reads 0 on every replica, a slow one too. The other estimate is the
// mean time the window's stub_status reads took: a request NGINX answers
// from memory, so about the least any request took, and what a CPU hog
// beside NGINX or a backlog of work slows down. It stands alone in a
// window without client requests, where the law has nothing to divide.
func windowMetrics(from, to snapshot, cores float64) map[string]float64 {
	m := map[string]float64{}
	if dt := to.stubAt.Sub(from.stubAt).Seconds(); !from.stubAt.IsZero() && dt > 0 {
		m[protocol.MetricInflight] = float64(to.inprog)
		n := to.readings - from.readings
		if n > 0 {
			if rtt := (to.sumRTT - from.sumRTT).Seconds() / float64(n) * 1000; rtt > 0 {
				m[protocol.MetricLatencyMS] = rtt
			}
		}
		if dreq := to.requests - from.requests; dreq >= 0 {
			rps := float64(dreq) / dt
			m[protocol.MetricRPS] = rps
			if n > 0 && rps > 0 {
				meanInprog := (to.sumInprog - from.sumInprog) / float64(n)
				m[protocol.MetricLatencyMS] = max(meanInprog/rps*1000, m[protocol.MetricLatencyMS])
			}
		}
	}
	if dt := to.cpuAt.Sub(from.cpuAt).Seconds(); !from.cpuAt.IsZero() && dt > 0 {
		share := min(max((to.cpu-from.cpu).Seconds()/dt/cores, 0), 1)
		m[protocol.MetricCPU] = share
		m[protocol.MetricUtilization] = share
		if from.poolOK && to.poolOK {
			other := ((to.pool - from.pool) - (to.cpu - from.cpu)).Seconds()
			m[protocol.MetricCPUOther] = min(max(other/dt/cores, 0), 1)
		}
	}
	return m
}

// LoadProbe answers a load probe: the requests in progress now (a fresh
// stub_status reading, or the latest one when that fails) and the
// latency estimate over the last second of readings (windowMetrics'
// latency_ms, the fresh reading's own time included). Without stub_status
// it answers zero requests and the CPU-blind estimate 0.
func (a *Agent) LoadProbe(ctx context.Context) protocol.LoadProbe {
	if a.cfg.StubStatus != "" {
		_ = a.readStub(ctx, false)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ring) == 0 {
		return protocol.LoadProbe{}
	}
	to := a.ring[len(a.ring)-1]
	from := a.ring[0]
	for _, s := range a.ring {
		if to.stubAt.Sub(s.stubAt) <= probeWindow {
			break
		}
		from = s
	}
	lat := windowMetrics(from, to, a.cfg.Cores)[protocol.MetricLatencyMS]
	return protocol.LoadProbe{RIF: to.inprog, LatencyMS: lat}
}

// Handler serves the agent's own listener: load probes at
// protocol.ProbePath, the monitor's pulls at pullPath with pull (when not
// nil), and GET /healthz.
func (a *Agent) Handler(pullPath string, pull http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(protocol.ProbePath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "load probes are GET requests", http.StatusMethodNotAllowed)
			return
		}
		// The balancer probes the replica's address and NGINX passes the
		// probe on: it is NGINX's request too, but not a client's.
		a.ownStarted.Add(1)
		a.ownInflight.Add(1)
		defer a.ownInflight.Add(-1)
		ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Sample)
		defer cancel()
		body, _ := json.Marshal(a.LoadProbe(ctx))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(body)
	})
	if pull != nil && pullPath != "" {
		mux.Handle(pullPath, pull)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// WaitReachable polls target with GET until it answers anything (any
// status: the replica is up) or timeout passes.
func WaitReachable(ctx context.Context, hc *http.Client, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica %s did not answer within %s: %w", target, timeout, last)
		case <-tick.C:
		}
	}
}
