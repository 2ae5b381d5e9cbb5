package balancer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Report takes a pushed load report from the replica the token belongs to
// and returns its advisory.
func (b *Balancer) Report(token string, r protocol.Report) (protocol.Advisory, error) {
	if token == "" {
		return protocol.Advisory{}, ErrUnknownToken
	}
	b.mu.RLock()
	m := b.tokens[registry.HashToken(token)]
	b.mu.RUnlock()
	if m == nil {
		m = b.storedToken(token) // leaderreport.go: in a cluster only
	}
	if m == nil {
		return protocol.Advisory{}, ErrUnknownToken
	}
	return m.g.report(m, r)
}

// report feeds one report to the analyzer and returns the advisory, with
// this instance's term; in a cluster, only while this instance leads the
// group (else an error: leaderreport.go).
func (g *group) report(m *member, r protocol.Report) (protocol.Advisory, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.members[m.rec.ID] != m {
		return protocol.Advisory{}, ErrUnknownToken
	}
	if err := checkReportWorker(m.rec, r); err != nil {
		return protocol.Advisory{}, err // workerreport.go
	}
	role := g.roleLocked()
	if role.lead != g.leading {
		g.syncLeadershipLocked()
	}
	if !role.lead {
		return protocol.Advisory{}, g.notLeaderLocked(role.status) // leaderreport.go
	}
	if r.Worker != nil {
		adv, err := g.workerReportLocked(m, r) // workerreport.go
		adv.Term = uint64(role.term)
		return adv, err
	}
	adv, err := g.feedReportLocked(m, r)
	adv.Term = uint64(role.term)
	return adv, err
}

// feedReportLocked feeds the replica's report (a multi-process replica's
// combined one) to the analyzer and returns its advisory, without the
// term. Caller holds g.mu and leads the group.
func (g *group) feedReportLocked(m *member, r protocol.Report) (protocol.Advisory, error) {
	g.tcpReportClientsLocked(m.rec.ID, &r) // tcpgroup.go
	adv, err := g.core.Report(m.rec.ID, r, g.b.now())
	if err != nil {
		return protocol.Advisory{}, err
	}
	if l := g.b.opts.Leadership; l != nil {
		l.Report(g.name) // the new leader's warm-up counts reports
	}
	inflight, ok := r.Metrics[protocol.MetricInflight]
	if !ok {
		inflight = math.NaN()
	}
	m.live.NoteReport(inflight)
	return adv, nil
}

// startPullLocked starts polling m's monitor URL if it is in pull mode
// and this instance leads the group (leadership.go). Caller holds g.mu.
func (g *group) startPullLocked(m *member) {
	if m.rec.Monitor.Mode != protocol.MonitorPull || m.pullStop != nil || !g.leading {
		return
	}
	stop := make(chan struct{})
	m.pullStop = stop
	go g.pull(m, stop)
}

// pull GETs the monitor's URL every interval (counted from the end of the
// previous poll, on the balancer's clock), passing the current advisory in
// the Fulcrum-Advisory header, and feeds the report it answers.
func (g *group) pull(m *member, stop chan struct{}) {
	var t clock.Ticker
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		g.mu.Lock()
		interval := m.rec.Monitor.Interval.D()
		if interval == 0 {
			interval = g.spec.ReportInterval.D()
		}
		u, id := m.rec.Monitor.URL, m.rec.ID
		adv := g.core.Advisory(id)
		adv.Term = uint64(g.roleLocked().term)
		g.mu.Unlock()

		if err := g.pollOnce(m, u, adv, interval); err != nil {
			g.b.log.Debug("pull failed", "group", g.name, "replica", id, "url", u, "err", err)
		}
		if t == nil {
			t = g.b.clock.NewTicker(interval)
		} else {
			t.Reset(interval)
		}
		select {
		case <-stop:
			return
		case <-g.b.ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (g *group) pollOnce(m *member, u string, adv protocol.Advisory, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(g.b.ctx, interval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	hdr, _ := json.Marshal(adv)
	req.Header.Set(protocol.HeaderAdvisory, string(hdr))
	resp, err := g.pullClientFor(u).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, protocol.MaxReportBytes+1))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("monitor answered %s", resp.Status)
	}
	r, err := protocol.DecodeReport(body)
	if err != nil {
		return fmt.Errorf("bad report from monitor: %w", err)
	}
	_, err = g.report(m, r)
	return err
}
