package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/loghist"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ReportNow closes the current report window, pushes the report to the
// balancer and applies the advisory it answers with, which it returns. The
// background loop does the same every interval; ReportNow is for tests and
// for applications that report on their own schedule. If the balancer
// rejects the token and the monitor can register, it registers again (with
// replace) and sends the report once more.
func (m *Monitor) ReportNow(ctx context.Context) (protocol.Advisory, error) {
	if m.opts.Mode != protocol.MonitorPush {
		return protocol.Advisory{}, ErrPullMode
	}
	m.reportMu.Lock()
	defer m.reportMu.Unlock()
	return m.pushLocked(ctx)
}

// pushLocked sends one report and applies the answer. Caller must hold
// m.reportMu.
func (m *Monitor) pushLocked(ctx context.Context) (protocol.Advisory, error) {
	reg := m.reg.Load()
	if reg == nil {
		return protocol.Advisory{}, ErrNotRegistered
	}
	rep := m.closeWindowLocked(m.clock.Now())
	rep.Worker = m.opts.Worker
	body, err := json.Marshal(rep)
	if err != nil {
		return protocol.Advisory{}, fmt.Errorf("monitor: encode report: %w", err)
	}
	adv, err := m.postReport(ctx, reg.Token, body)
	if errors.Is(err, ErrUnauthorized) && m.canRegister() {
		m.log.Warn("balancer rejected the replica token; registering again")
		if _, rerr := m.register(ctx); rerr != nil {
			// The registration's error first: refusal looks at it.
			return protocol.Advisory{}, errors.Join(rerr, err)
		}
		adv, err = m.postReport(ctx, m.reg.Load().Token, body)
	}
	if err != nil {
		return protocol.Advisory{}, err
	}
	m.applyLocked(adv)
	return adv, nil
}

// postReport POSTs an encoded report to the admin URL reported to now,
// following 307s itself (with the token) and trying the other admin URLs
// when one fails (see Options.Admins). The instance that answers becomes
// the one reported to.
func (m *Monitor) postReport(ctx context.Context, token string, body []byte) (protocol.Advisory, error) {
	m.routeMu.Lock()
	order, was := m.route.order(), m.route.current
	m.routeMu.Unlock()
	var errs []error
	hops := 0
	for _, base := range order {
		for {
			adv, location, err := m.postReportTo(ctx, base, token, body)
			if err == nil && location == "" {
				if base != was {
					m.routeMu.Lock()
					m.route.current = base
					m.routeMu.Unlock()
					m.log.Info("reporting to another balancer instance", "admin", base, "was", was)
				}
				return adv, nil
			}
			if err == nil {
				to, rerr := redirectBase(base, location)
				switch {
				case rerr != nil:
					err = fmt.Errorf("monitor: report to %s: %w", base, rerr)
				case hops >= maxReportRedirects:
					err = fmt.Errorf("monitor: report to %s: more than %d redirects", base, maxReportRedirects)
				default:
					hops++
					base = to
					continue
				}
			}
			if ctx.Err() != nil || !tryElsewhere(err) {
				return protocol.Advisory{}, err
			}
			errs = append(errs, err)
			break
		}
	}
	if len(errs) == 1 {
		return protocol.Advisory{}, errs[0]
	}
	return protocol.Advisory{}, fmt.Errorf("monitor: report: no admin URL took it: %w", errors.Join(errs...))
}

// postReportTo POSTs an encoded report to base+"/v1/report" once. A 307 or
// 308 returns its Location and no error (an error when it has none).
func (m *Monitor) postReportTo(ctx context.Context, base, token string, body []byte) (adv protocol.Advisory, location string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+reportPath, bytes.NewReader(body))
	if err != nil {
		return protocol.Advisory{}, "", fmt.Errorf("monitor: report: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := m.noRedirects.Do(req)
	if err != nil {
		return protocol.Advisory{}, "", fmt.Errorf("monitor: report: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
		loc := resp.Header.Get("Location")
		if loc == "" { // not a report taken: another admin URL may take it
			return protocol.Advisory{}, "", fmt.Errorf("monitor: report to %s: %d without a Location", base, resp.StatusCode)
		}
		return protocol.Advisory{}, loc, nil
	default:
		return protocol.Advisory{}, "", fmt.Errorf("monitor: report to %s: %w", base, responseError(resp))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&adv); err != nil {
		return protocol.Advisory{}, "", &decodeError{fmt.Errorf("monitor: report: decode advisory: %w", err)}
	}
	return adv, "", nil
}

// PullHandler serves the balancer's pulls: it applies the advisory passed
// in the Fulcrum-Advisory header, closes the report window and answers the
// report. The middleware already serves it on the path of Options.PullURL;
// mount PullHandler yourself to serve pulls elsewhere (on a private
// listener, say). Whoever can reach it can set the advisory, so keep it
// where only the balancer can.
func (m *Monitor) PullHandler() http.Handler {
	return http.HandlerFunc(m.servePull)
}

func (m *Monitor) servePull(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "pulls are GET requests")
		return
	}
	m.reportMu.Lock()
	if h := r.Header.Get(protocol.HeaderAdvisory); h != "" {
		var adv protocol.Advisory
		if err := json.Unmarshal([]byte(h), &adv); err != nil {
			m.log.Warn("ignoring a malformed advisory in a pull", "header", protocol.HeaderAdvisory, "err", err)
		} else {
			m.applyLocked(adv)
		}
	}
	rep := m.closeWindowLocked(m.clock.Now())
	m.reportMu.Unlock()
	body, err := json.Marshal(rep)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// closeWindowLocked ends the current report window at now and returns its
// report. A window of no length (two reports at the same instant) returns
// the previous report. Caller must hold m.reportMu.
func (m *Monitor) closeWindowLocked(now time.Time) protocol.Report {
	if m.external != nil {
		return m.closeExternalWindowLocked(now)
	}
	elapsed := now.Sub(m.win.start)
	if elapsed <= 0 {
		return m.last
	}
	secs := elapsed.Seconds()
	calls, done, lat := m.calls.Load(), m.done.Load(), m.latencyNS.Load()
	dCalls, dDone, dLat := calls-m.win.calls, done-m.win.done, lat-m.win.latencyNS
	var hist [loghist.Buckets]uint64
	m.hist.load(&hist)
	p50, p99, haveQuantiles := windowQuantiles(&hist, &m.win.hist)
	m.win = window{start: now, calls: calls, done: done, latencyNS: lat, hist: hist}

	rps := float64(dCalls) / secs
	if dDone > 0 {
		mean := float64(dLat) / float64(dDone) / float64(time.Millisecond)
		if !m.haveLatency {
			m.latency, m.haveLatency = mean, true
		} else {
			m.latency = latencyWeight*mean + (1-latencyWeight)*m.latency
		}
	}
	inflight := float64(m.inflight.Load())
	concurrency := float64(dLat) / float64(elapsed)
	cs := m.cpu.sample(now)
	cpu := cs.share
	m.rates = m.clients.window(secs)

	metrics := map[string]float64{
		protocol.MetricInflight:  inflight,
		protocol.MetricRPS:       rps,
		protocol.MetricLatencyMS: m.latency,
	}
	if haveQuantiles {
		metrics[protocol.MetricLatencyP50MS] = p50
		metrics[protocol.MetricLatencyP99MS] = p99
	}
	// Bound clients: those that called in the window (a client bound but
	// idle for the whole window is not counted).
	metrics[protocol.MetricBoundClients] = float64(len(m.rates))
	if cs.ok {
		metrics[protocol.MetricCPU] = cpu
	}
	if cs.otherOK {
		metrics[protocol.MetricCPUOther] = cs.other
	}
	var load float64
	switch {
	case m.opts.LoadFunc != nil:
		load = m.opts.LoadFunc()
	case m.opts.Load == LoadInflight:
		load = max(inflight, concurrency)
	case m.opts.Load == LoadCPU:
		load = cpu
	case m.opts.Load == LoadLatency:
		load = m.latency
	default:
		load = rps
	}
	if math.IsNaN(load) || math.IsInf(load, 0) || load < 0 {
		load = 0
	}
	load = min(load, protocol.MaxLoad) // the balancer refuses more
	top := m.rates
	if len(top) > m.opts.TopClients {
		top = top[:m.opts.TopClients:m.opts.TopClients]
	}
	m.last = protocol.Report{Load: load, Metrics: metrics, Clients: top}
	return m.last
}

// applyLocked makes adv the advisory the middleware obeys, unless it is the
// one already obeyed (same level, term and epoch) or its term is below the
// highest seen since the last registration (then it is ignored whole), and
// adopts its report interval. Caller must hold m.reportMu.
func (m *Monitor) applyLocked(adv protocol.Advisory) {
	admit, highest := admitTerm(m.termSeen.Load(), adv.Term)
	if !admit {
		m.log.Warn("ignoring an advisory of an older term", "term", adv.Term, "highest_term", highest, "epoch", adv.Epoch)
		return
	}
	m.termSeen.Store(highest)
	if adv.ReportInterval > 0 {
		m.setInterval(adv.ReportInterval.D())
	}
	switch adv.Advisory {
	case protocol.Nominal, protocol.High, protocol.Drain:
	default:
		m.log.Warn("unknown advisory level; treating it as nominal", "advisory", adv.Advisory)
		adv.Advisory = protocol.Nominal
	}
	cur := m.advice.Load()
	if cur.sameAs(adv) {
		return
	}
	if adv.Advisory == protocol.Nominal {
		m.advice.Store(nominalAdvice)
		if cur != nominalAdvice {
			m.log.Info("advisory nominal", "term", adv.Term, "epoch", adv.Epoch)
		}
		return
	}
	a := newAdvice(adv, m.rates, m.shedTargetLocked, m.ownsClient)
	m.advice.Store(a)
	switch {
	case a.drain:
		m.log.Info("advisory drain: sending every bound client back", "term", adv.Term, "epoch", adv.Epoch)
	default:
		m.log.Info("advisory high: sending clients back once each", "term", adv.Term, "epoch", adv.Epoch, "shed", adv.Shed, "clients", a.chosen())
	}
}

// ownsClient reports whether this monitor sends client back when an
// advisory names it: always for a single-process replica, only the
// clients protocol.WorkerOf gives this worker otherwise.
func (m *Monitor) ownsClient(client string) bool {
	w := m.opts.Worker
	return w == nil || protocol.WorkerOf(client, w.Count) == w.Index
}

// shedTargetLocked converts an amount of load to shed into calls/s of bound
// clients: as is when the load is the call rate, otherwise as the same share
// of the call rate as shed is of the last reported load. Caller must hold
// m.reportMu.
func (m *Monitor) shedTargetLocked(shed float64) float64 {
	if m.opts.LoadFunc == nil && m.opts.Load == LoadRate {
		return shed
	}
	if m.last.Load <= 0 {
		return 0
	}
	return shed / m.last.Load * m.last.Metrics[protocol.MetricRPS]
}

func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
