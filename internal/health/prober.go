package health

import (
	"context"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults applied by the Prober to zero settings (the same as
// registry.WithDefaults).
const (
	DefaultInterval = time.Second
	DefaultTimeout  = 500 * time.Millisecond
	DefaultRise     = 2
	DefaultFall     = 3
)

// maxProbeBody bounds what is read of a probe's answer.
const maxProbeBody = 4 << 10

// Target is one replica to probe.
type Target struct {
	ID string
	// URL is the replica's base URL; probes GET URL + Health.Path.
	URL string
}

// ProberOptions are the Prober's seams. The zero value is usable.
type ProberOptions struct {
	// Client makes the probes; nil means a client that opens a new
	// connection per probe (as HAProxy does, so that a replica that stops
	// accepting is noticed) with Dial, follows no redirects and uses no
	// proxy.
	Client *http.Client
	// Dial opens the default client's connections; a net.Dialer's when
	// nil. Ignored when Client is set.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTLS, when not nil, opens the default client's connections to
	// https:// targets, TLS handshake included (a group's replica_tls);
	// nil: Dial and http.Transport's TLS client (the system roots).
	// Ignored when Client is set.
	DialTLS func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clock times the rounds (Run) and the probes' latencies; the system
	// clock when nil.
	Clock clock.Clock
	// OnResult, when not nil, gets every probe's outcome (e.g. to count it
	// as a call with Group.Observe). Called from Round's goroutine.
	OnResult func(id string, latency time.Duration, ok bool)
	// Probe, when not nil, replaces the HTTP GET for protocols that have
	// their own probe (a GIOP LocateRequest): it probes target within ctx
	// (which carries the timeout) and reports success. Targets are then
	// probed whatever the health path says.
	Probe func(ctx context.Context, t Target) bool
}

// Prober probes replicas over HTTP and keeps an Active state for each: a
// probe succeeds when the GET answers 2xx or 3xx within the timeout. Every
// target starts Up; changes are reported through the callback given to
// NewProber, from Run's goroutine, one at a time, in id order within a
// round. Safe for concurrent use, except that Round must not run
// concurrently with itself (Run calls it).
type Prober struct {
	onChange func(replicaID, state string)
	client   *http.Client
	onResult func(string, time.Duration, bool)
	probeFn  func(context.Context, Target) bool
	clock    clock.Clock

	mu      sync.Mutex
	cfg     protocol.Health
	targets map[string]*target
}

type target struct {
	url   string
	state Active
}

// NewProber returns a prober with no targets. onChange must not be nil.
// The prober logs nothing: a state change is the caller's to log, once
// (the balancer logs "replica health changed").
func NewProber(cfg protocol.Health, onChange func(replicaID, state string), opts ProberOptions) *Prober {
	p := &Prober{onChange: onChange, client: opts.Client, onResult: opts.OnResult,
		probeFn: opts.Probe, targets: map[string]*target{}, clock: clock.Or(opts.Clock)}
	if p.client == nil {
		dial := opts.Dial
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		p.client = &http.Client{
			Transport: &http.Transport{
				Proxy:             nil,
				DialContext:       dial,
				DialTLSContext:    opts.DialTLS,
				DisableKeepAlives: true,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	p.SetConfig(cfg)
	return p
}

// SetConfig changes the settings at run time; states are kept. An empty
// Path stops probing (targets keep their last state).
func (p *Prober) SetConfig(cfg protocol.Health) {
	if cfg.Interval <= 0 {
		cfg.Interval = durationOf(DefaultInterval)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = durationOf(DefaultTimeout)
	}
	if cfg.Rise <= 0 {
		cfg.Rise = DefaultRise
	}
	if cfg.Fall <= 0 {
		cfg.Fall = DefaultFall
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg = cfg
	for _, t := range p.targets {
		t.state.SetThresholds(cfg.Rise, cfg.Fall)
	}
}

// SetTargets replaces the set of targets. A target whose id and URL are
// unchanged keeps its state; new ones (and ones with a new URL) start Up.
func (p *Prober) SetTargets(ts []Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[string]*target, len(ts))
	for _, t := range ts {
		if old := p.targets[t.ID]; old != nil && old.url == t.URL {
			next[t.ID] = old
			continue
		}
		next[t.ID] = &target{url: t.URL, state: NewActive(p.cfg.Rise, p.cfg.Fall)}
	}
	p.targets = next
}

// States returns every target's state by id.
func (p *Prober) States() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.targets))
	for id, t := range p.targets {
		out[id] = t.state.State()
	}
	return out
}

// Run probes every target at once, then every Interval (on the clock's
// ticker; a round that outlasts it is followed by the next at once), until
// ctx ends. It returns ctx's error after the round in progress has
// finished.
func (p *Prober) Run(ctx context.Context) error {
	p.mu.Lock()
	interval := p.cfg.Interval.D()
	p.mu.Unlock()
	t := p.clock.NewTicker(interval)
	defer t.Stop()
	for {
		p.Round(ctx)
		p.mu.Lock()
		cur := p.cfg.Interval.D()
		p.mu.Unlock()
		if cur != interval {
			interval = cur
			t.Reset(interval)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
	}
}

type probeResult struct {
	id, url string
	ok      bool
	latency time.Duration
}

// Round probes every target once, concurrently, feeds the results to their
// states and reports the changes. It returns when every probe has ended.
func (p *Prober) Round(ctx context.Context) {
	p.mu.Lock()
	cfg := p.cfg
	results := make([]probeResult, 0, len(p.targets))
	for id, t := range p.targets {
		results = append(results, probeResult{id: id, url: t.url})
	}
	p.mu.Unlock()
	if (cfg.Path == "" && p.probeFn == nil) || len(results) == 0 {
		return
	}
	sort.Slice(results, func(i, j int) bool { return results[i].id < results[j].id })

	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			r := &results[i]
			start := p.clock.Now()
			if p.probeFn != nil {
				pctx, cancel := context.WithTimeout(ctx, cfg.Timeout.D())
				r.ok = p.probeFn(pctx, Target{ID: r.id, URL: r.url})
				cancel()
			} else {
				r.ok = p.probe(ctx, r.url, cfg)
			}
			r.latency = p.clock.Now().Sub(start)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // results cut short by the caller say nothing of the replicas
	}

	var changes []Change
	p.mu.Lock()
	for _, r := range results {
		t := p.targets[r.id]
		if t == nil || t.url != r.url {
			continue // removed or moved during the round
		}
		if t.state.Result(r.ok) {
			changes = append(changes, Change{ID: r.id, State: t.state.State()})
		}
	}
	p.mu.Unlock()

	for _, r := range results {
		if p.onResult != nil {
			p.onResult(r.id, r.latency, r.ok)
		}
	}
	for _, c := range changes {
		p.onChange(c.ID, c.State)
	}
}

// probe GETs base + cfg.Path within cfg.Timeout.
func (p *Prober) probe(ctx context.Context, base string, cfg protocol.Health) bool {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, probeURL(base, cfg.Path), nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "fulcrum-health")
	req.Header.Set(protocol.HeaderProbe, "1")
	res, err := p.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxProbeBody))
	_ = res.Body.Close()
	return res.StatusCode >= 200 && res.StatusCode < 400
}

func durationOf(d time.Duration) protocol.Duration { return protocol.Duration(d) }

// probeURL appends the health path to a base URL with a base path.
func probeURL(base, path string) string {
	return strings.TrimSuffix(base, "/") + path
}
