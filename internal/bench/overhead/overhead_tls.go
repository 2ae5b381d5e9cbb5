package overhead

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// The configurations of overhead --tls: per-request groups terminating
// TLS on each HTTP/1 engine, and HAProxy terminating TLS, beside direct
// (plain, the baseline of the ratios).
const (
	cfgTLSLean    = "per-request-tls-lean"
	cfgTLSStdlib  = "per-request-tls-stdlib"
	cfgHAProxyTLS = "haproxy-tls"
)

// tlsRun is what overhead --tls records beside the rows.
type tlsRun struct {
	HAProxy *bench.HAProxyTLS `json:"haproxy,omitempty"`
	// Handshakes are full handshakes per second (no resumption) of each
	// TLS configuration, one client making them one after another.
	Handshakes map[string]float64 `json:"handshakes_per_s"`
	// HandshakeCount is how many each measurement made.
	HandshakeCount int `json:"handshake_count"`
}

// setUpTLS starts the TLS configurations: one certificate for all (ECDSA
// P-256; TLS 1.3 and X25519 on every client), a replica process each, a
// balancer per engine with one per-request group, HAProxy with nbthread
// set to the machine's CPUs.
func (o *Overhead) setUpTLS(ctx context.Context, env *bench.Env) ([]*overheadConfig, *tlsRun, error) {
	if env.Protocol != bench.ProtocolHTTP {
		return nil, nil, fmt.Errorf("overhead: --tls runs over http only, not %s", env.Protocol)
	}
	cert, err := bench.WriteBenchCert(filepath.Join(env.Dir, "logs", "tls"))
	if err != nil {
		return nil, nil, fmt.Errorf("overhead: certificate: %w", err)
	}
	run := &tlsRun{Handshakes: map[string]float64{}}
	reps := map[string]*bench.Replica{}
	for _, name := range []string{bench.ConfigDirect, cfgTLSLean, cfgTLSStdlib, cfgHAProxyTLS, cfgControl} {
		if name == cfgHAProxyTLS && env.HAProxy.Missing != "" {
			continue
		}
		r, err := env.StartReplica(ctx, "replica-"+name, nil)
		if err != nil {
			return nil, nil, err
		}
		reps[name] = r
	}
	path := "/prime/" + strconv.Itoa(bench.PrimeN)
	cfgs := []*overheadConfig{
		{name: bench.ConfigDirect, callers: bench.NewCallers(bench.Endpoint{URL: reps[bench.ConfigDirect].URL + path}, 1),
			replicaCPU: bench.NewCPUMeter(reps[bench.ConfigDirect].Proc)},
	}
	for _, e := range []struct{ name, engine string }{{cfgTLSLean, "lean"}, {cfgTLSStdlib, "stdlib"}} {
		bal, err := env.StartBalancerEngine(ctx, e.engine, bench.GroupSpec{Name: "tls", Binding: "per-request", Strategy: "round-robin",
			Replicas: []string{reps[e.name].URL}, TLS: cert})
		if err != nil {
			return nil, nil, err
		}
		if err := bal.WaitReady(ctx, "tls", 1, false); err != nil {
			return nil, nil, err
		}
		door := bal.FrontDoor("tls")
		cfgs = append(cfgs, &overheadConfig{name: e.name, callers: bench.NewCallers(bench.Endpoint{URL: door + path, TLS: cert.Client}, 1),
			replicaCPU: bench.NewCPUMeter(reps[e.name].Proc), proxyCPU: bench.NewCPUMeter(bal.Proc), handshakeAt: hostOf(door)})
	}
	hp := &overheadConfig{name: cfgHAProxyTLS, skipped: env.HAProxy.Missing}
	if r := reps[cfgHAProxyTLS]; r != nil {
		nb := runtime.NumCPU()
		px, err := env.StartHAProxyTLS(ctx, []string{r.URL}, cert, nb)
		if err != nil {
			return nil, nil, err
		}
		lines, err := env.HAProxyOpenSSL(ctx)
		if err != nil {
			return nil, nil, err
		}
		run.HAProxy = &bench.HAProxyTLS{NBThread: nb, OpenSSL: lines}
		hp.callers = bench.NewCallers(bench.Endpoint{URL: px.URL + path, TLS: cert.Client}, 1)
		hp.replicaCPU, hp.proxyCPU, hp.handshakeAt = bench.NewCPUMeter(r.Proc), bench.NewCPUMeter(px.Proc), hostOf(px.URL)
	}
	cfgs = append(cfgs, hp, &overheadConfig{name: cfgControl, control: true, callers: bench.NewCallers(bench.Endpoint{URL: reps[cfgControl].URL + path}, 1),
		replicaCPU: bench.NewCPUMeter(reps[cfgControl].Proc)})
	if err := warmOverhead(ctx, cfgs); err != nil {
		return nil, nil, err
	}
	run.HandshakeCount = bench.Pick(env.Size, 5000, 1000, 50)
	o.tlsCert = cert
	return cfgs, run, nil
}

// hostOf is a URL's host:port.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// measureHandshakes makes each TLS configuration's full handshakes, one
// configuration after another, after the keep-alive rounds.
func (o *Overhead) measureHandshakes(ctx context.Context, env *bench.Env, cfgs []*overheadConfig, run *tlsRun) error {
	for _, c := range cfgs {
		if c.handshakeAt == "" || c.skipped != "" {
			continue
		}
		rate, err := bench.HandshakeRate(ctx, c.handshakeAt, o.tlsCert.Client, run.HandshakeCount)
		if err != nil {
			return fmt.Errorf("overhead: %s: %w", c.name, err)
		}
		run.Handshakes[c.name] = rate
		env.Logf("overhead: %s: %.0f full handshakes/s", c.name, rate)
	}
	return nil
}

// tlsReport is the report of overhead --tls.
func tlsReport(cfgs []*overheadConfig, rows []OverheadRow, control *OverheadRow, run *tlsRun, calls, rounds int) *bench.Report {
	rep := bench.NewReport("fulcrum bench overhead --tls")
	rep.Para("Per-request proxying with TLS termination: one single-threaded closed-loop client on one kept-alive connection, one prime replica (`GET /prime/%d`) per configuration, "+
		"%d calls through each configuration in %d interleaved rounds. Every TLS configuration serves the same certificate (ECDSA P-256); the client offers only TLS 1.3, X25519 and ALPN http/1.1. "+
		"`direct` is the plain replica, the baseline of the ratios (medians of per-round ratios). Latencies in µs.", bench.PrimeN, calls, rounds)
	var table [][]string
	for _, r := range rows {
		if r.Skipped != "" {
			table = append(table, []string{r.Name, "skipped: " + r.Skipped, "", "", "", "", "", "", ""})
			continue
		}
		table = append(table, []string{r.Name, strconv.FormatInt(r.Count, 10), bench.Num(r.ThroughputRPS, 0), ratio(r.ThroughputRatio),
			bench.Num(r.Mean, 1), bench.Num(r.P50, 0), bench.Num(r.P99, 0), ptrNum(r.ProxyCPUUS), strconv.FormatInt(r.Errors, 10)})
	}
	rep.Table([]string{"configuration", "calls", "calls/s", "× direct", "mean", "p50", "p99", "proxy CPU µs/call", "errors"}, table)
	if control != nil && control.ThroughputRatio != nil {
		rep.Para("A/A control (`direct` again, a replica of its own): throughput %.3f × direct — read every ratio as ± at least that.", *control.ThroughputRatio)
	}
	var hs [][]string
	for _, name := range []string{cfgTLSLean, cfgTLSStdlib, cfgHAProxyTLS} {
		if v, ok := run.Handshakes[name]; ok {
			hs = append(hs, []string{name, bench.Num(v, 0)})
		}
	}
	rep.Heading("Full handshakes")
	rep.Para("%d new connections, one after another, each a full TLS 1.3 handshake (no resumption), after the rounds. Reported, not a target: "+
		"the client's own handshakes run on the same cores.", run.HandshakeCount)
	rep.Table([]string{"configuration", "handshakes/s"}, hs)
	if run.HAProxy != nil {
		rep.Heading("HAProxy")
		rep.Para("nbthread %d (the machine's CPUs); `haproxy -vv`: %s.", run.HAProxy.NBThread, strings.Join(run.HAProxy.OpenSSL, "; "))
	}
	var lean, stdlib, hp *overheadConfig
	for _, c := range cfgs {
		switch c.name {
		case cfgTLSLean:
			lean = c
		case cfgTLSStdlib:
			stdlib = c
		case cfgHAProxyTLS:
			hp = c
		}
	}
	// The target holds for the engine TLS front doors run by default
	// (lean); stdlib's ratio is reported beside it, for operators who
	// choose http_engine: stdlib.
	hpRan := hp != nil && hp.skipped == "" && len(hp.rounds) > 0
	if lean != nil {
		what := lean.name + " keep-alive throughput ≥ 1.0 × HAProxy with TLS"
		if hpRan {
			thr, _ := roundRatios(lean, hp)
			med := stats.Median(thr)
			rep.Target(what, med >= 1.0, "median per-round ratio %.3f", med)
		} else {
			rep.TargetUnknown(what, "HAProxy did not run")
		}
	}
	if stdlib != nil && hpRan {
		thr, _ := roundRatios(stdlib, hp)
		rep.Para("Reported, not a target (TLS front doors run on the lean engine unless `http_engine: stdlib`): "+
			"per-request-tls-stdlib over HAProxy with TLS, median per-round throughput ratio %.3f.", stats.Median(thr))
	}
	if lean != nil && stdlib != nil {
		thr, _ := roundRatios(lean, stdlib)
		rep.Para("Lean over stdlib behind TLS: median per-round throughput ratio %.3f.", stats.Median(thr))
	}
	return rep
}
