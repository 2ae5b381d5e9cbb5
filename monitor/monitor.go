package monitor

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/loghist"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Errors of the monitor's lifecycle and reports.
var (
	// ErrNotRegistered is returned by ReportNow before the replica has a
	// token.
	ErrNotRegistered = errors.New("monitor: not registered")
	// ErrPullMode is returned by ReportNow in pull mode, where the balancer
	// asks for reports.
	ErrPullMode = errors.New("monitor: reports are pulled in pull mode")
	// ErrStarted is returned by Start when the monitor was already started
	// or closed.
	ErrStarted = errors.New("monitor: already started or closed")
	// ErrUnauthorized wraps a 401 answer of the balancer: the token is
	// unknown or revoked.
	ErrUnauthorized = errors.New("monitor: balancer rejected the token")
	// ErrGaveUp is wrapped by Err once the balancer has refused
	// Options.RegisterAttempts registrations in a row.
	ErrGaveUp = errors.New("monitor: gave up registering")
)

// Monitor measures a replica's load, reports it to the balancer and obeys
// the advisories it gets back. Create it with New, wrap the replica's
// handler with Handler, call Start once the replica listens and Close when
// it shuts down. Safe for concurrent use. Must not be copied.
type Monitor struct {
	opts  Options
	log   *slog.Logger
	clock Clock
	// pullPath is the path the middleware answers pulls on ("" in push
	// mode).
	pullPath string
	// bindingPrefix is "<group>/" (empty when Group is not set): only
	// calls bound within the group are counted and sent back.
	bindingPrefix string
	// pullInterval is the Interval the user asked for (0: the group's).
	pullInterval time.Duration
	// external supplies the metrics of a monitor made by NewExternal
	// (nil otherwise); set before Start, read-only after.
	external ExternalMetrics

	// Hot path state, updated atomically.
	inflight  atomic.Int64
	calls     atomic.Uint64    // calls started
	done      atomic.Uint64    // calls finished
	latencyNS atomic.Uint64    // summed latency of finished calls
	latencies latencyRing      // the latest calls, for load probes
	hist      latencyHistogram // finished calls by latency, for p50/p99
	rebinds   atomic.Uint64    // calls answered with a rebind redirect
	clients   *clientTable
	advice    atomic.Pointer[advice]
	reg       atomic.Pointer[registration]
	interval  atomic.Int64 // nanoseconds
	// termSeen is the highest advisory term seen since the last
	// registration; written under reportMu, reset by adopt.
	termSeen atomic.Uint64

	// noRedirects is opts.HTTPClient with redirects left to the monitor.
	noRedirects *http.Client
	// routeMu guards route, the admin URLs and the one reported to now.
	routeMu sync.Mutex
	route   adminRoute

	// reportMu serialises reports: closing a window, applying an advisory.
	reportMu    sync.Mutex
	win         window                // guarded by reportMu
	latency     float64               // latency EWMA in ms; guarded by reportMu
	haveLatency bool                  // latency holds a value; guarded by reportMu
	cpu         *cpuMeter             // guarded by reportMu
	rates       []protocol.ClientRate // last window's, busiest first; guarded by reportMu
	last        protocol.Report       // guarded by reportMu

	mu           sync.Mutex
	started      bool // guarded by mu
	closed       bool // guarded by mu
	cancel       context.CancelFunc
	runDone      chan struct{}
	registered   chan struct{} // closed at the first registration
	registerOnce sync.Once
	failed       chan struct{} // closed when the monitor gives up registering
	failErr      error         // why; written once before failed is closed
	refusals     int           // registrations refused in a row; run's goroutine only
}

// registration is what the monitor holds of its registration.
type registration struct {
	protocol.Registered
	// frontDoor is where rebinds point, without a trailing slash.
	frontDoor string
}

// window is the counters at the start of the current report window.
type window struct {
	start     time.Time
	calls     uint64
	done      uint64
	latencyNS uint64
	hist      [loghist.Buckets]uint64
}

// latencyWeight is the weight of the newest window's mean latency in the
// latency EWMA.
const latencyWeight = 0.5

// New returns a monitor for opts. It does not talk to the balancer until
// Start.
func New(opts Options) (*Monitor, error) {
	pullInterval := opts.Interval
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Monitor{
		opts:         opts,
		log:          opts.Logger.With("component", "monitor", "group", opts.Group),
		clock:        opts.Clock,
		clients:      newClientTable(),
		registered:   make(chan struct{}),
		failed:       make(chan struct{}),
		pullInterval: pullInterval,
		route:        newAdminRoute(opts.Admins),
	}
	nr := *opts.HTTPClient
	nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	m.noRedirects = &nr
	if opts.Group != "" {
		m.bindingPrefix = opts.Group + "/"
	}
	if opts.Mode == protocol.MonitorPull && opts.PullURL != "" {
		if u, err := url.Parse(opts.PullURL); err == nil {
			m.pullPath = u.Path
			if m.pullPath == "" {
				m.pullPath = "/"
			}
		}
	}
	interval := opts.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	m.setInterval(interval)
	m.advice.Store(nominalAdvice)
	now := m.clock.Now()
	m.win.start = now
	m.cpu = newCPUMeter(now, opts.CPUs)
	if opts.Token != "" {
		m.adopt(protocol.Registered{Token: opts.Token})
		if opts.FrontDoor == "" {
			m.log.Warn("no FrontDoor given with Token: clients cannot be sent back until the monitor registers")
		}
	}
	return m, nil
}

// Start registers the replica (unless Options.Token was given) and, in push
// mode, starts reporting. It does not wait for the balancer: registration
// is retried with backoff in the background while the replica serves; use
// WaitRegistered to wait for it. Start may be called once.
func (m *Monitor) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return ErrStarted
	}
	m.started = true
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.runDone = make(chan struct{})
	go m.run(ctx)
	return nil
}

// Close stops reporting, stops sending clients back and, if Start
// registered the replica (and the monitor did not give up) and it is no
// worker's (Options.Worker), deregisters it. ctx bounds the deregistration. Calls after the first return nil.
func (m *Monitor) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	cancel, done := m.cancel, m.runDone
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.advice.Store(nominalAdvice)
	reg := m.reg.Load()
	if m.opts.Token != "" || reg == nil || reg.ID == "" || m.Err() != nil {
		return nil // nothing registered, or refused: nothing to take back
	}
	if m.opts.Worker != nil {
		return nil // the replica is the sibling workers' too
	}
	return m.deregister(ctx, reg)
}

// run registers, then pushes reports every interval until ctx ends.
func (m *Monitor) run(ctx context.Context) {
	defer close(m.runDone)
	if m.opts.Token == "" && !m.registerLoop(ctx) {
		return
	}
	if m.opts.Mode != protocol.MonitorPush {
		return
	}
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.clock.After(m.Interval()):
		}
		m.reportMu.Lock()
		_, err := m.pushLocked(ctx)
		m.reportMu.Unlock()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && m.refused(err):
			return // gave up: the balancer refuses to take the replica back
		case err != nil && !failing:
			failing = true
			m.log.Warn("load report failed; will keep trying every interval", "err", err)
		case err == nil && failing:
			failing = false
			m.log.Info("load reports reach the balancer again")
		}
	}
}

// WaitRegistered waits until the replica is registered (at once with
// Options.Token) and returns its registration, or the monitor's error when
// it gives up registering first.
func (m *Monitor) WaitRegistered(ctx context.Context) (protocol.Registered, error) {
	select {
	case <-m.registered:
		return m.reg.Load().Registered, nil
	case <-m.failed:
		return protocol.Registered{}, m.failErr
	case <-ctx.Done():
		return protocol.Registered{}, ctx.Err()
	}
}

// Failed is closed when the monitor gives up: the balancer refused
// Options.RegisterAttempts registrations in a row. The monitor then does
// nothing more; a program that needs it should stop (Err says why).
func (m *Monitor) Failed() <-chan struct{} { return m.failed }

// Err returns why the monitor gave up (wrapping ErrGaveUp and the last
// refusal, an *APIError), or nil while it has not.
func (m *Monitor) Err() error {
	select {
	case <-m.failed:
		return m.failErr
	default:
		return nil
	}
}

// Registered returns the current registration, and false before there is
// one.
func (m *Monitor) Registered() (protocol.Registered, bool) {
	r := m.reg.Load()
	if r == nil {
		return protocol.Registered{}, false
	}
	return r.Registered, true
}

// Advisory returns the advisory the monitor currently obeys.
func (m *Monitor) Advisory() protocol.Advisory {
	return m.advice.Load().adv
}

// Interval returns the current report interval.
func (m *Monitor) Interval() time.Duration {
	return time.Duration(m.interval.Load())
}

func (m *Monitor) setInterval(d time.Duration) {
	m.interval.Store(int64(max(d, minInterval)))
}

// Stats are a monitor's cumulative counters.
type Stats struct {
	// Inflight is the number of calls in flight now.
	Inflight int64
	// Calls counts the calls run (not those sent back).
	Calls uint64
	// Rebinds counts the calls answered with a rebind redirect.
	Rebinds uint64
}

// Stats returns the monitor's counters.
func (m *Monitor) Stats() Stats {
	return Stats{
		Inflight: m.inflight.Load(),
		Calls:    m.calls.Load(),
		Rebinds:  m.rebinds.Load(),
	}
}

// adopt makes r the current registration.
func (m *Monitor) adopt(r protocol.Registered) {
	fd := m.opts.FrontDoor
	if fd == "" {
		fd = trimSlash(r.FrontDoor)
	}
	m.reg.Store(&registration{Registered: r, frontDoor: fd})
	m.termSeen.Store(0) // a registration starts afresh: any term is accepted
	if r.ReportInterval > 0 {
		m.setInterval(r.ReportInterval.D())
	}
	m.registerOnce.Do(func() { close(m.registered) })
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
