package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/fulcrum-lb/fulcrum/protocol"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// GroupSpec is a group of a balancer the bench starts.
type GroupSpec struct {
	// Name is the group's name.
	Name string
	// Binding is per-session, on-demand or per-request.
	Binding string
	// Strategy defaults to the balancer's default (least-loaded).
	Strategy string
	// Protocol is the group's protocol (default http; giop, or tcp with
	// replicas given as host:port).
	Protocol string
	// ReportInterval defaults to 500ms.
	ReportInterval time.Duration
	// Replicas are static members (base URLs); replicas may also
	// register themselves (StartReplica with a Join).
	Replicas []string
	// TLS, when set, makes the front door terminate TLS with this
	// certificate, TLS 1.3 only.
	TLS *BenchCert
	// Extra are more of the group's YAML keys, indented by four spaces
	// and ending in a newline (a replicated group's replicated block).
	Extra string
}

// Balancer is a running "fulcrum serve".
type Balancer struct {
	// Admin is the admin API's base URL.
	Admin string
	// Proc is the process.
	Proc *Proc

	doors map[string]string
	hc    *http.Client
}

// StartBalancer starts "fulcrum serve" with a generated config holding
// groups: its own data directory, the admin API and every front door on
// free loopback ports. It returns once /readyz answers 200 (every front
// door serving).
func (e *Env) StartBalancer(ctx context.Context, groups ...GroupSpec) (*Balancer, error) {
	return e.launchBalancer(ctx, func() (string, string, error) {
		a, err := FreeAddr()
		return a, a, err
	}, groups, false)
}

// StartBalancerEngine is StartBalancer with http_engine set to engine.
func (e *Env) StartBalancerEngine(ctx context.Context, engine string, groups ...GroupSpec) (*Balancer, error) {
	return e.launchBalancerEngine(ctx, func() (string, string, error) {
		a, err := FreeAddr()
		return a, a, err
	}, groups, false, engine)
}

// launchBalancer starts "fulcrum serve" with groups in its config and
// returns once /readyz answers 200, with each group's front door known.
// addr gives the admin API's listen address and the address to call it
// at (the same, unless it listens on every address); it is asked again,
// up to three times, when the process does not become ready, since a
// free port may be taken before the balancer binds it. insecure runs the
// admin API without a token, for addresses only the testbed reaches.
func (e *Env) launchBalancer(ctx context.Context, addr func() (listen, call string, err error), groups []GroupSpec, insecure bool) (*Balancer, error) {
	return e.launchBalancerEngine(ctx, addr, groups, insecure, "")
}

// launchBalancerEngine is launchBalancer with http_engine set to engine
// ("": the default).
func (e *Env) launchBalancerEngine(ctx context.Context, addr func() (listen, call string, err error), groups []GroupSpec, insecure bool, engine string) (*Balancer, error) {
	var lastErr error
	for range 3 {
		listen, call, err := addr()
		if err != nil {
			return nil, err
		}
		data, err := e.ScratchDir("fulcrum-data")
		if err != nil {
			return nil, err
		}
		name := e.UniqueName("fulcrum-serve")
		cfgPath := filepath.Join(e.Dir, "logs", name+".yaml")
		cfg := balancerConfig(listen, data, groups)
		if engine != "" {
			cfg = "http_engine: " + engine + "\n" + cfg
		}
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		args := []string{"serve", "--config", cfgPath}
		if insecure {
			args = append(args, "--insecure")
		}
		if e.Profile {
			args = append(args, "--cpuprofile", filepath.Join(e.Dir, "logs", name+".cpu.pprof"))
		}
		p, err := e.Start(ProcSpec{Name: name, Path: e.Binary, Args: args})
		if err != nil {
			return nil, err
		}
		b := &Balancer{Admin: "http://" + call, Proc: p, doors: map[string]string{}, hc: &http.Client{Timeout: 5 * time.Second}}
		if lastErr = WaitHTTP(ctx, p, b.Admin+"/readyz", 20*time.Second); lastErr != nil {
			p.Stop(0)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		for _, g := range groups {
			st, err := b.Group(ctx, g.Name)
			if err != nil {
				p.Stop(0)
				return nil, err
			}
			b.doors[g.Name] = st.Advertise
		}
		e.Logf("balancer %s: admin %s, pid %d", name, b.Admin, p.Pid())
		return b, nil
	}
	return nil, lastErr
}

// balancerConfig is the YAML config of a bench balancer.
func balancerConfig(admin, dataDir string, groups []GroupSpec) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "admin: %s\ndata_dir: %s\nshutdown_timeout: 1s\n", admin, yamlQuote(dataDir))
	if len(groups) > 0 {
		sb.WriteString("groups:\n")
	}
	for _, g := range groups {
		interval := g.ReportInterval
		if interval == 0 {
			interval = 500 * time.Millisecond
		}
		fmt.Fprintf(&sb, "  - name: %s\n    front_door: 127.0.0.1:0\n    binding: %s\n", g.Name, g.Binding)
		if g.Strategy != "" {
			fmt.Fprintf(&sb, "    strategy: %s\n", g.Strategy)
		}
		fmt.Fprintf(&sb, "    report_interval: %s\n", interval)
		switch g.Protocol {
		case ProtocolGIOP:
			// GIOP replicas are probed with a LocateRequest.
			sb.WriteString("    protocol: giop\n    health: {interval: 1s, timeout: 500ms}\n")
		case protocol.ProtocolTCP:
			// TCP replicas are probed with a connect; a connection has no
			// request to time.
			sb.WriteString("    protocol: tcp\n    health: {interval: 1s, timeout: 500ms}\n")
		default:
			sb.WriteString("    health: {path: /healthz, interval: 1s, timeout: 500ms}\n")
		}
		if g.Protocol == protocol.ProtocolTCP {
			sb.WriteString("    timeouts: {connect: 2s, idle: 90s}\n")
		} else {
			sb.WriteString("    timeouts: {connect: 2s, request: 60s, idle: 90s}\n")
		}
		if g.TLS != nil {
			fmt.Fprintf(&sb, "    tls: {cert: %s, key: %s, min_version: \"1.3\"}\n", yamlQuote(g.TLS.CertFile), yamlQuote(g.TLS.KeyFile))
		}
		sb.WriteString(g.Extra)
		if len(g.Replicas) > 0 {
			sb.WriteString("    replicas:\n")
			for _, r := range g.Replicas {
				fmt.Fprintf(&sb, "      - address: %s\n", yamlQuote(r))
			}
		}
	}
	return sb.String()
}

// yamlQuote quotes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	b, _ := json.Marshal(s) // JSON strings are YAML double-quoted scalars
	return string(b)
}

// FrontDoor returns the URL of a group's front door.
func (b *Balancer) FrontDoor(group string) string { return b.doors[group] }

// GroupStatus is the admin API's group status, as the bench reads it.
type GroupStatus = protocol.GroupStatus

// Group reads a group's status from the admin API.
func (b *Balancer) Group(ctx context.Context, name string) (GroupStatus, error) {
	var st GroupStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Admin+"/v1/groups/"+name, nil)
	if err != nil {
		return st, err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return st, fmt.Errorf("bench: group %s: %w", name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("bench: group %s: %s: %s", name, resp.Status, strings.TrimSpace(string(body)))
	}
	return st, json.Unmarshal(body, &st)
}

// WaitReady waits until group has n active replicas and, when reported
// is set, every one of them has reported its load (their monitors are
// running).
func (b *Balancer) WaitReady(ctx context.Context, group string, n int, reported bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := b.Group(ctx, group)
		ready := 0
		if err == nil {
			for _, r := range st.Replicas {
				if r.State == "active" && (!reported || r.Load != nil) { // Load: a fresh report
					ready++
				}
			}
			if ready >= n {
				return nil
			}
		}
		select {
		case <-b.Proc.exited:
			return b.Proc.died()
		case <-ctx.Done():
			return fmt.Errorf("bench: group %s has %d of %d replicas ready (last error: %v); see %s", group, ready, n, err, b.Proc.Log)
		case <-tick.C:
		}
	}
}

// StartBalancerAt is StartBalancer with the admin API on host (a free
// port), for replicas in other network namespaces, which cannot reach
// the root namespace's loopback. host is a testbed gateway, reachable
// only from this machine and its replicas, so the admin API runs without
// a token (--insecure).
func (e *Env) StartBalancerAt(ctx context.Context, host string, groups ...GroupSpec) (*Balancer, error) {
	return e.launchBalancer(ctx, func() (string, string, error) {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", "", err
		}
		a := ln.Addr().String()
		ln.Close()
		return a, a, nil
	}, groups, true)
}

// StartTestbedBalancer starts "fulcrum serve" with no group, its admin
// API on every address, so that agents in the testbed's namespaces reach
// it at their gateways. Only the testbed's namespaces, on this machine,
// reach it, so the admin API runs without a token (--insecure).
func (e *Env) StartTestbedBalancer(ctx context.Context) (*Balancer, error) {
	return e.launchBalancer(ctx, func() (string, string, error) {
		addr, err := FreeAddr()
		if err != nil {
			return "", "", err
		}
		_, port, _ := strings.Cut(addr, ":")
		return "0.0.0.0:" + port, "127.0.0.1:" + port, nil
	}, nil, true)
}

// AddGroup makes the group name with spec (the admin API's group
// object) by PUT /v1/groups/{name} and returns its front door, which
// FrontDoor returns from then on.
func (b *Balancer) AddGroup(ctx context.Context, name string, spec map[string]any) (string, error) {
	if err := b.Send(ctx, http.MethodPut, "/v1/groups/"+name, spec); err != nil {
		return "", err
	}
	st, err := b.Group(ctx, name)
	if err != nil {
		return "", err
	}
	b.doors[name] = st.Advertise
	return st.Advertise, nil
}

// Send sends body as JSON to the admin API to the admin API and fails unless it answers
// 200 or 201.
func (b *Balancer) Send(ctx context.Context, method, path string, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, b.Admin+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
