package tcpagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Config configures an Agent.
type Config struct {
	// Target is the replica's address, HOST:PORT; its port tells the
	// replica's client connections from others (required).
	Target string
	// Net finds the net directory of the replica's network namespace
	// (PidNet, CgroupNet) whose tcp and tcp6 tables are counted
	// (required).
	Net NetDir
	// CPU, Pool, Cores and Sample measure the replica's CPU time as the
	// HTTP agent does (httpagent.Config, whose defaults apply): CPU the
	// replica's, Pool what shares its cores. CPU nil: no cpu metrics.
	CPU    httpagent.CPUSource
	Pool   httpagent.CPUSource
	Cores  float64
	Sample time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Agent reads an unmodified TCP replica's load from outside: the CPU
// time of its processes or cgroup (through the HTTP agent's measurement)
// and its open client connections. Its Metrics feed a monitor made with
// monitor.NewExternal. Safe for concurrent use.
type Agent struct {
	cpu   *httpagent.Agent // nil without Config.CPU
	conns Connections
	log   *slog.Logger

	mu      sync.Mutex
	connErr bool // the last count failed (logged once); guarded by mu
}

// New checks cfg and returns an agent. It reads nothing until Ready, Run
// or Metrics.
func New(cfg Config) (*Agent, error) {
	port, err := targetPort(cfg.Target)
	if err != nil {
		return nil, err
	}
	if cfg.Net == nil {
		return nil, errors.New("tcpagent: no network namespace to count connections in: give a process or a cgroup")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Agent{conns: Connections{Dir: cfg.Net, IP: targetIP(cfg.Target), Port: port}, log: cfg.Logger.With("component", "agent")}
	if cfg.Pool != nil && cfg.CPU == nil {
		return nil, errors.New("tcpagent: a pool of CPU (the replica's cgroup) needs the replica's own CPU source (its process) to tell other work from it")
	}
	if cfg.CPU != nil {
		a.cpu, err = httpagent.New(httpagent.Config{CPU: cfg.CPU, Pool: cfg.Pool, Cores: cfg.Cores, Sample: cfg.Sample, Logger: cfg.Logger, Now: cfg.Now})
		if err != nil {
			return nil, fmt.Errorf("tcpagent: %w", err)
		}
	}
	return a, nil
}

// targetIP is the address of a HOST:PORT target whose host is a literal,
// non-wildcard IP; the zero Addr (any address) otherwise.
func targetIP(target string) netip.Addr {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return netip.Addr{}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.IsUnspecified() {
		return netip.Addr{}
	}
	return ip.WithZone("")
}

// targetPort is the port of a HOST:PORT target.
func targetPort(target string) (uint16, error) {
	_, p, err := net.SplitHostPort(target)
	if err != nil {
		return 0, &protocol.FieldError{Field: "target", Value: target, Allowed: "must be HOST:PORT, the replica's address"}
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return 0, &protocol.FieldError{Field: "target", Value: target, Allowed: "must be HOST:PORT with a port in [1, 65535]"}
	}
	return uint16(port), nil
}

// Ready reads every source once and returns the first failure: whether
// the agent can measure the replica at all.
func (a *Agent) Ready(ctx context.Context) error {
	if a.cpu != nil {
		if err := a.cpu.Ready(ctx); err != nil {
			return err
		}
	}
	_, err := a.conns.Count()
	return err
}

// Run reads the CPU time every Config.Sample until ctx is done (the
// connections are counted when a report is made).
func (a *Agent) Run(ctx context.Context) {
	if a.cpu == nil {
		<-ctx.Done()
		return
	}
	a.cpu.Run(ctx)
}

// Metrics closes the report window: cpu, utilization (and cpu_other)
// over the window as the HTTP agent computes them, and inflight, the
// replica's client connections open now. A metric whose source failed is
// left out; failures are logged once until the source answers again. It
// is a monitor.ExternalMetrics.
func (a *Agent) Metrics(now time.Time) map[string]float64 {
	m := map[string]float64{}
	if a.cpu != nil {
		m = a.cpu.Metrics(now)
	}
	n, err := a.conns.Count()
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case err != nil && !a.connErr:
		a.connErr = true
		a.log.Warn("counting the replica's connections failed; inflight is left out until it works", "port", a.conns.Port, "err", err)
	case err == nil && a.connErr:
		a.connErr = false
		a.log.Info("the replica's connections can be counted again", "port", a.conns.Port)
	}
	if err == nil {
		m[protocol.MetricInflight] = float64(n)
	}
	return m
}

// WaitListening dials target until it accepts a connection (the replica
// is up) or timeout passes. The connection is closed at once.
func WaitListening(ctx context.Context, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var d net.Dialer
	var last error
	for {
		c, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			return c.Close()
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica %s did not accept a connection within %s: %w", target, timeout, last)
		case <-tick.C:
		}
	}
}
