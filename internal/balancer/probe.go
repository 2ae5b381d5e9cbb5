package balancer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The I/O side of the strategy package's probing seam (strategy.Prober):
// a group whose strategy measures its replicas actively (albl, prequal;
// weighted-round-robin-orca only asks for a periodic rebuild) gets one
// probe loop, started and stopped with the group and replaced when the
// strategy changes. Every ProbeSpec.Period the loop asks the strategy which
// eligible replicas to probe, runs the probes over real sockets with their
// timeouts (durations on the real clock, like the front door's deadlines)
// and hands the results back; round-based strategies then get a new
// picker, and their alerts are logged, counted and sent as "alert" events.

// maxProbeBody bounds what an HTTP probe reads of an object.
const maxProbeBody = 1 << 20

// maxLoadProbeBody bounds a load probe's answer.
const maxLoadProbeBody = 4 << 10

// probeRun is a running probe loop.
type probeRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startProbesLocked starts the probe loop if the group runs and its
// strategy is a Prober. Caller holds g.mu.
func (g *group) startProbesLocked() {
	p, ok := g.strat.(strategy.Prober)
	if !ok || !g.running || g.probes != nil {
		return
	}
	ctx, cancel := context.WithCancel(g.b.ctx)
	run := &probeRun{cancel: cancel, done: make(chan struct{})}
	g.probes = run
	go g.probeLoop(ctx, p, run.done)
}

// stopProbesLocked stops the probe loop and returns a channel closed once
// it has ended (nil when none ran). A loop that ends after this never
// publishes. Caller holds g.mu; wait on the channel only after releasing
// it.
func (g *group) stopProbesLocked() <-chan struct{} {
	run := g.probes
	if run == nil {
		return nil
	}
	g.probes = nil
	run.cancel()
	return run.done
}

// alertLocked reports a strategy's alert. Caller holds g.mu.
func (g *group) alertLocked(msg string) {
	g.alerts.Add(1)
	g.b.log.Warn("strategy alert", "group", g.name, "strategy", g.strat.Name(), "alert", msg)
	g.emitLocked("alert", map[string]any{"strategy": g.strat.Name(), "message": msg})
}

// probeLoop runs p's probes until ctx ends.
func (g *group) probeLoop(ctx context.Context, p strategy.Prober, done chan struct{}) {
	defer close(done)
	spec := p.Probes()
	c := newProbeClient(g.b.opts.Dial, g.dialReplicaTLS("http/1.1"))
	defer c.close()
	var async sync.WaitGroup
	defer async.Wait()
	var busyMu sync.Mutex
	busy := map[string]bool{} // replicas with an asynchronous probe out
	tick := g.b.clock.NewTicker(spec.Period)
	defer tick.Stop()
	var targets []int
	for {
		snap := g.snap.Load()
		reps := make([]*strategy.Replica, len(snap.Eligible))
		for i, m := range snap.Eligible {
			reps[i] = m.Replica
		}
		round := g.b.now()
		targets = p.ProbeTargets(reps, round, targets[:0])
		if spec.Async {
			for _, i := range targets {
				if i < 0 || i >= len(snap.Eligible) {
					continue
				}
				m := snap.Eligible[i]
				busyMu.Lock()
				if busy[m.ID()] {
					busyMu.Unlock()
					continue
				}
				busy[m.ID()] = true
				busyMu.Unlock()
				async.Go(func() {
					results := c.probeMember(ctx, m, spec.Probes)
					if ctx.Err() == nil {
						p.Probed(results, round)
					}
					busyMu.Lock()
					delete(busy, m.ID())
					busyMu.Unlock()
				})
			}
		} else {
			results := c.probeRound(ctx, snap.Eligible, targets, spec.Probes)
			if ctx.Err() != nil {
				return
			}
			alert := p.Probed(results, round)
			g.mu.Lock()
			if ctx.Err() == nil {
				g.publishLocked()
				if alert != "" {
					g.alertLocked(alert)
				}
			}
			g.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// probeClient makes the probes.
type probeClient struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// fresh opens a connection per request (ProbeHTTPGet: the fetch time
	// includes the handshake, as a new client's would).
	fresh *http.Client
	// kept reuses connections (ProbeLoad: frequent, tiny).
	kept *http.Client
}

// newProbeClient makes the probes' clients: connections open with dial,
// TLS ones (https:// replicas) with dialTLS.
func newProbeClient(dial, dialTLS func(ctx context.Context, network, addr string) (net.Conn, error)) *probeClient {
	c := &probeClient{dial: dial}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.fresh = &http.Client{
		Transport:     &http.Transport{Proxy: nil, DialContext: dial, DialTLSContext: dialTLS, DisableKeepAlives: true},
		CheckRedirect: noRedirect,
	}
	c.kept = &http.Client{
		Transport:     &http.Transport{Proxy: nil, DialContext: dial, DialTLSContext: dialTLS, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: noRedirect,
	}
	return c
}

func (c *probeClient) close() {
	c.fresh.CloseIdleConnections()
	c.kept.CloseIdleConnections()
}

// probeRound probes the target members concurrently and returns every
// result once all have ended.
func (c *probeClient) probeRound(ctx context.Context, eligible []*frontdoor.Member, targets []int, probes []strategy.Probe) []strategy.ProbeResult {
	results := make([][]strategy.ProbeResult, len(targets))
	var wg sync.WaitGroup
	for k, i := range targets {
		if i < 0 || i >= len(eligible) {
			continue
		}
		wg.Go(func() { results[k] = c.probeMember(ctx, eligible[i], probes) })
	}
	wg.Wait()
	var all []strategy.ProbeResult
	for _, r := range results {
		all = append(all, r...)
	}
	return all
}

// probeMember runs every probe on m concurrently.
func (c *probeClient) probeMember(ctx context.Context, m *frontdoor.Member, probes []strategy.Probe) []strategy.ProbeResult {
	out := make([]strategy.ProbeResult, len(probes))
	var wg sync.WaitGroup
	for k, pr := range probes {
		wg.Go(func() { out[k] = c.probe(ctx, m, pr) })
	}
	wg.Wait()
	return out
}

// probe runs one probe on m.
func (c *probeClient) probe(ctx context.Context, m *frontdoor.Member, pr strategy.Probe) strategy.ProbeResult {
	res := strategy.ProbeResult{Replica: m.ID(), Kind: pr.Kind}
	base := m.URL
	if base == nil {
		u, err := url.Parse(m.Address)
		if err != nil {
			return res
		}
		base = u
	}
	ctx, cancel := context.WithTimeout(ctx, pr.Timeout)
	defer cancel()
	start := time.Now()
	var err error
	switch pr.Kind {
	case strategy.ProbeTCPConnect:
		var conn net.Conn
		if conn, err = c.dial(ctx, "tcp", hostPort(base)); err == nil {
			res.Took = time.Since(start)
			_ = conn.Close()
		}
	case strategy.ProbeHTTPGet:
		err = c.get(ctx, c.fresh, probeURL(base, pr.Path), func(resp *http.Response) error {
			if resp.StatusCode >= 500 {
				return errors.New(resp.Status)
			}
			_, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
			res.Took = time.Since(start)
			return err
		})
	case strategy.ProbeLoad:
		err = c.get(ctx, c.kept, probeURL(base, pr.Path), func(resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				return errors.New(resp.Status)
			}
			var lp protocol.LoadProbe
			if err := json.NewDecoder(io.LimitReader(resp.Body, maxLoadProbeBody)).Decode(&lp); err != nil {
				return err
			}
			res.Took = time.Since(start)
			res.RIF, res.LatencyMS = float64(lp.RIF), lp.LatencyMS
			return nil
		})
	default:
		err = errors.New("unknown probe kind")
	}
	res.OK = err == nil
	return res
}

// get GETs u with client and hands the answer to read.
func (c *probeClient) get(ctx context.Context, client *http.Client, u string, read func(*http.Response) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set(protocol.HeaderProbe, "1")
	req.Header.Set("User-Agent", "fulcrum-probe")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return read(resp)
}

// hostPort is u's host with the scheme's default port when it has none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// probeURL is the replica's base URL followed by path (which may carry a
// query).
func probeURL(base *url.URL, path string) string {
	p, q, _ := strings.Cut(path, "?")
	u := url.URL{Scheme: base.Scheme, Host: base.Host, Path: strings.TrimSuffix(base.Path, "/") + p, RawQuery: q}
	return u.String()
}
