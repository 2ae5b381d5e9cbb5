package replication

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The groups of the experiment's balancer.
const (
	groupReplicated = "counter"
	groupPerRequest = "plain"
	// groupRelays is the replicated relays' (callers.go).
	groupRelays = "relay"
)

// counter is a running "fulcrum backend counter".
type counter struct {
	url  string
	proc *bench.Proc
}

// replica is one member of the replicated group: a counter and the
// agent in front of it.
type replica struct {
	counter
	agent *bench.Proc
	// address is the agent's URL, the replica's registered address.
	address string
}

// setup is the experiment's processes.
type setup struct {
	env   *bench.Env
	bin   string // the fulcrum binary the replicas run
	bal   *bench.Balancer
	plain counter // behind the per-request group, and called directly
	reps  []*replica
	hc    *http.Client
	// callers are the replicated-callers topologies' processes, started
	// by startCallers.
	callers callerProcs
	// bed, with --testbed, is where the replicas and the plain counter
	// run (testbed.go); nil on loopback.
	bed *bed
}

// start starts the balancer, the plain counter and n replicas; bin is the
// binary of the replicas (the failpoint binary for fault runs). With
// onTestbed they run on the testbed, with room for most replicas
// (startOnTestbed).
func start(ctx context.Context, env *bench.Env, bin string, n, most int, onTestbed bool) (*setup, error) {
	if onTestbed {
		return startOnTestbed(ctx, env, bin, n, most)
	}
	s := &setup{env: env, bin: bin, hc: &http.Client{Timeout: 10 * time.Second}}
	plain, err := s.startCounter(ctx, "counter-plain", nil)
	if err != nil {
		return nil, err
	}
	s.plain = plain
	bal, err := env.StartBalancer(ctx,
		bench.GroupSpec{Name: groupReplicated, Binding: protocol.BindingReplicated, Extra: "    replicated: {read_only: [\"GET /value\"]}\n"},
		bench.GroupSpec{Name: groupPerRequest, Binding: protocol.PerRequest, Strategy: "round-robin", Replicas: []string{plain.url}},
		bench.GroupSpec{Name: groupRelays, Binding: protocol.BindingReplicated, Extra: "    replicated: {read_only: [\"GET /value\"]}\n"},
	)
	if err != nil {
		return nil, err
	}
	s.bal = bal
	for range n {
		if _, err := s.addReplica(ctx, nil); err != nil {
			return nil, err
		}
	}
	return s, s.waitReplicas(ctx)
}

// startCounter starts a counter on a free loopback port.
func (s *setup) startCounter(ctx context.Context, name string, environ []string) (counter, error) {
	return s.startBackend(ctx, name, environ, "counter", "--listen", "127.0.0.1:0")
}

// startBackend starts "fulcrum backend <args>" (a counter or a relay) and
// waits until it serves.
func (s *setup) startBackend(ctx context.Context, name string, environ []string, args ...string) (counter, error) {
	return s.startBackendSpec(ctx, bench.ProcSpec{Name: s.env.UniqueName(name), Path: s.bin, Args: append([]string{"backend"}, args...), Env: environ})
}

// startBackendSpec starts spec, a "fulcrum backend", and waits until it
// serves.
func (s *setup) startBackendSpec(ctx context.Context, spec bench.ProcSpec) (counter, error) {
	lines := make(chan string, 1)
	spec.FirstLine = lines
	p, err := s.env.Start(spec)
	if err != nil {
		return counter{}, err
	}
	url, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
	if err != nil {
		p.Stop(0)
		return counter{}, err
	}
	if err := bench.WaitHTTP(ctx, p, url+"/healthz", 20*time.Second); err != nil {
		p.Stop(0)
		return counter{}, err
	}
	return counter{url: url, proc: p}, nil
}

// addReplica starts a counter and its agent, which registers with the
// replicated group (and, joining a group with state, takes a checkpoint).
func (s *setup) addReplica(ctx context.Context, environ []string) (*replica, error) {
	return s.addReplicaEnv(ctx, environ, environ)
}

// addReplicaEnv is addReplica with the counter's and the agent's own
// environments.
func (s *setup) addReplicaEnv(ctx context.Context, counterEnv, agentEnv []string) (*replica, error) {
	if s.bed != nil {
		return s.addSlotReplica(ctx, counterEnv, agentEnv)
	}
	i := len(s.reps) + 1
	c, err := s.startCounter(ctx, fmt.Sprintf("counter-%d", i), counterEnv)
	if err != nil {
		return nil, err
	}
	dir, err := s.env.ScratchDir(s.env.UniqueName(fmt.Sprintf("agent-%d", i)))
	if err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	p, err := s.env.Start(bench.ProcSpec{Name: s.env.UniqueName(fmt.Sprintf("agent-%d", i)), Path: s.bin, FirstLine: lines, Env: agentEnv,
		Args: []string{"agent", "replicated", "--target", c.url, "--listen", "127.0.0.1:0", "--register", s.bal.Admin, "--group", groupReplicated, "--data-dir", dir}})
	if err != nil {
		return nil, err
	}
	addr, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
	if err != nil {
		p.Stop(0)
		return nil, err
	}
	r := &replica{counter: c, agent: p, address: addr}
	s.reps = append(s.reps, r)
	return r, nil
}

// waitReplicas waits until every live replica is active in the group and
// every counter holds the same value (a joiner has its checkpoint and has
// caught up).
func (s *setup) waitReplicas(ctx context.Context) error {
	live := s.live()
	if err := s.bal.WaitReady(ctx, groupReplicated, len(live), false); err != nil {
		return err
	}
	// Every agent applying the log (not still joining): a joiner that
	// took its checkpoint after the clients began would apply fewer
	// entries than they sent, and a failpoint armed for the nth would not
	// fire.
	for _, r := range live {
		if err := bench.WaitHTTP(ctx, r.agent, r.address+protocol.ReplicationHealthzPath, 30*time.Second); err != nil {
			return fmt.Errorf("replication: agent %s is not applying the log: %w", r.agent.Name, err)
		}
	}
	_, err := s.converged(ctx, 30*time.Second)
	return err
}

// live are the replicas whose processes run.
func (s *setup) live() []*replica {
	var out []*replica
	for _, r := range s.reps {
		select {
		case <-r.proc.Exited():
			continue
		case <-r.agent.Exited():
			continue
		default:
			out = append(out, r)
		}
	}
	return out
}

// value reads a counter's value.
func (s *setup) value(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/value", nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/value: %s: %s", url, resp.Status, body)
	}
	var v struct {
		Value int64 `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, fmt.Errorf("GET %s/value: %w", url, err)
	}
	return v.Value, nil
}

// converged waits until the live replicas' counters hold one value and
// returns it: the replicas apply after the first reply, so the last ones
// may still be applying when the clients stop.
func (s *setup) converged(ctx context.Context, within time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last []int64
	for {
		last = last[:0]
		same := true
		for _, r := range s.live() {
			v, err := s.value(ctx, r.url)
			if err != nil {
				same = false
				break
			}
			if len(last) > 0 && v != last[0] {
				same = false
			}
			last = append(last, v)
		}
		if same && len(last) > 0 {
			return last[0], nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("replication: the live replicas' counters did not converge within %s: %v", within, last)
		case <-tick.C:
		}
	}
}

// stop stops every process of s.
func (s *setup) stop() {
	for _, r := range s.reps {
		r.agent.Stop(time.Second)
		r.proc.Stop(time.Second)
	}
	s.callers.stop()
	s.bal.Proc.Stop(time.Second)
	s.plain.proc.Stop(time.Second)
	if s.bed != nil {
		s.bed.close()
	}
}
