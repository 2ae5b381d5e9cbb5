package replication

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// Testbed mode (--testbed, docs/testbed.md): each replica — its counter
// and its agent together — runs in a testbed replica of its own (a
// network namespace and a cgroup of slotCPU cores), and so does the
// plain counter behind the per-request group; the balancer (the testbed
// balancer, its admin API on every address) and the clients run in the
// root namespace. The replicas' namespaces do not reach each other, so
// each agent is advertised at a port of the root namespace that forwards
// to it (a forwarder), which every namespace reaches at its gateway: the
// joiners' state transfer goes through it, the ordered calls do not.

const (
	// slotCPU is each replica's capacity in cores (the 0.25).
	slotCPU = 0.25
	// slotPeriod is the CFS period: 1 ms / slotCPU, the shortest with
	// the kernel's 1 ms minimum quota (docs/testbed.md).
	slotPeriod = 4 * time.Millisecond
	// slotCounterPort and slotAgentPort are where a replica's counter
	// and agent listen in its namespace.
	slotCounterPort = "8080"
	slotAgentPort   = "9100"
)

// bed is the testbed of a --testbed run: slots[0] holds the plain
// counter, slots[i] replica i.
type bed struct {
	tb    *testbed.Testbed
	slots []*testbed.Replica
	fwds  []*forwarder
}

// newBed makes the testbed with a slot for the plain counter and one for
// each of replicas replicas, all made up front so that a machine without
// the cores for them fails before anything runs.
func newBed(replicas int) (*bed, error) {
	tb, err := testbed.New(testbed.Options{CPUPeriod: slotPeriod})
	if err != nil {
		return nil, fmt.Errorf("replication: --testbed needs the testbed (root, network namespaces, cgroups; docs/testbed.md): %w", err)
	}
	b := &bed{tb: tb}
	for range replicas + 1 {
		r, err := tb.AddReplica(testbed.ReplicaSpec{CPU: slotCPU})
		if err != nil {
			b.close()
			return nil, fmt.Errorf("replication: --testbed with %d replicas of %.2f cores and the plain counter's: %w", replicas, slotCPU, err)
		}
		b.slots = append(b.slots, r)
	}
	return b, nil
}

// close stops the forwarders and removes the testbed (killing whatever
// still runs in it).
func (b *bed) close() {
	for _, f := range b.fwds {
		f.close()
	}
	_ = b.tb.Close()
}

// slotSpec is spec run in slot r: its namespace and cgroup, with one P
// (the slot has a quarter of a core; more Ps would spend the quota on the
// garbage collector and stall the rest of each period).
func slotSpec(r *testbed.Replica, spec bench.ProcSpec) bench.ProcSpec {
	spec.Env = append(append([]string(nil), spec.Env...), "GOMAXPROCS=1")
	spec.Wrap = func(cmd *exec.Cmd) error { return r.Wrap(cmd) }
	return spec
}

// startOnTestbed is start for --testbed: the bed with room for most
// replicas, the plain counter in its slot, the testbed balancer with the
// two groups, and n replicas.
func startOnTestbed(ctx context.Context, env *bench.Env, bin string, n, most int) (_ *setup, err error) {
	b, err := newBed(most)
	if err != nil {
		return nil, err
	}
	s := &setup{env: env, bin: bin, hc: &http.Client{Timeout: 10 * time.Second}, bed: b}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	plainSlot := b.slots[0]
	s.plain, err = s.startBackendSpec(ctx, slotSpec(plainSlot, bench.ProcSpec{Name: env.UniqueName("counter-plain"), Path: bin,
		Args: []string{"backend", "counter", "--listen", net.JoinHostPort(plainSlot.Addr().String(), slotCounterPort)}}))
	if err != nil {
		return nil, err
	}
	if s.bal, err = env.StartTestbedBalancer(ctx); err != nil {
		return nil, err
	}
	for _, g := range []struct {
		name string
		spec map[string]any
	}{
		{groupReplicated, testbedGroup(map[string]any{"binding": "replicated", "replicated": map[string]any{"read_only": []string{"GET /value"}}})},
		{groupPerRequest, testbedGroup(map[string]any{"binding": "per-request", "strategy": "round-robin", "replicas": []map[string]any{{"address": s.plain.url}}})},
	} {
		door, err := s.bal.AddGroup(ctx, g.name, g.spec)
		if err != nil {
			return nil, fmt.Errorf("replication: making group %s: %w", g.name, err)
		}
		env.Logf("group %s: front door %s", g.name, door)
	}
	for range n {
		if _, err := s.addReplicaEnv(ctx, nil, nil); err != nil {
			return nil, err
		}
	}
	return s, s.waitReplicas(ctx)
}

// testbedGroup is a group's admin API object: keys, with what
// bench.StartBalancer's config gives every group.
func testbedGroup(keys map[string]any) map[string]any {
	g := map[string]any{
		"front_door": "127.0.0.1:0", "report_interval": "500ms",
		"health":   map[string]any{"path": "/healthz", "interval": "1s", "timeout": "500ms"},
		"timeouts": map[string]any{"connect": "2s", "request": "60s", "idle": "90s"},
	}
	for k, v := range keys {
		g[k] = v
	}
	return g
}

// addSlotReplica is addReplicaEnv on the testbed: replica i's counter and
// agent in slot i, the agent registered at the slot's gateway and
// advertised at a forwarder.
func (s *setup) addSlotReplica(ctx context.Context, counterEnv, agentEnv []string) (*replica, error) {
	i := len(s.reps) + 1
	if i >= len(s.bed.slots) {
		return nil, fmt.Errorf("replication: --testbed: no slot for replica %d (the bed has room for %d)", i, len(s.bed.slots)-1)
	}
	slot := s.bed.slots[i]
	addr := slot.Addr().String()
	c, err := s.startBackendSpec(ctx, slotSpec(slot, bench.ProcSpec{Name: s.env.UniqueName(fmt.Sprintf("counter-%d", i)), Path: s.bin, Env: counterEnv,
		Args: []string{"backend", "counter", "--listen", net.JoinHostPort(addr, slotCounterPort)}}))
	if err != nil {
		return nil, err
	}
	dir, err := s.env.ScratchDir(s.env.UniqueName(fmt.Sprintf("agent-%d", i)))
	if err != nil {
		return nil, err
	}
	agentAddr := net.JoinHostPort(addr, slotAgentPort)
	fwd, err := newForwarder(agentAddr)
	if err != nil {
		return nil, err
	}
	s.bed.fwds = append(s.bed.fwds, fwd)
	gw := slot.Gateway().String()
	advertise := "http://" + net.JoinHostPort(gw, fwd.port)
	_, adminPort, _ := strings.Cut(strings.TrimPrefix(s.bal.Admin, "http://"), ":")
	lines := make(chan string, 1)
	p, err := s.env.Start(slotSpec(slot, bench.ProcSpec{Name: s.env.UniqueName(fmt.Sprintf("agent-%d", i)), Path: s.bin, FirstLine: lines, Env: agentEnv,
		Args: []string{"agent", "replicated", "--target", c.url, "--listen", agentAddr, "--advertise", advertise,
			"--register", "http://" + net.JoinHostPort(gw, adminPort), "--group", groupReplicated, "--data-dir", dir}}))
	if err != nil {
		return nil, err
	}
	if _, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second); err != nil {
		p.Stop(0)
		return nil, err
	}
	s.env.Logf("replica %d in %s (%s, %.2f cores): counter %s, agent %s advertised at %s", i, slot.Name(), addr, slot.CPU(), c.url, agentAddr, advertise)
	r := &replica{counter: c, agent: p, address: advertise}
	s.reps = append(s.reps, r)
	return r, nil
}

// forwarder passes TCP connections from a port on every address of the
// root namespace to an agent in its namespace, so that the other
// replicas' agents, which cannot reach that namespace, reach it at their
// own gateway.
type forwarder struct {
	ln   net.Listener
	to   string
	port string
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

// newForwarder listens on a free port of every address and forwards to
// to (host:port).
func newForwarder(to string) (*forwarder, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return nil, fmt.Errorf("replication: forwarder to %s: %w", to, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	f := &forwarder{ln: ln, to: to, port: port, open: map[net.Conn]struct{}{}}
	f.wg.Go(f.serve)
	return f, nil
}

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Go(func() { f.pass(c) })
	}
}

// pass copies c to a new connection to f.to and back until either side
// closes.
func (f *forwarder) pass(c net.Conn) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", f.to, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if !f.track(c, up) {
		return
	}
	defer f.untrack(c, up)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, c)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, up)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-done
}

// track records open connections for close; false once closed.
func (f *forwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		return false
	}
	for _, c := range cs {
		f.open[c] = struct{}{}
	}
	return true
}

func (f *forwarder) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.open, c)
	}
}

// close stops accepting, closes the open connections and waits for the
// goroutines.
func (f *forwarder) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.open {
		_ = c.Close()
	}
	f.open = nil
	f.mu.Unlock()
	f.wg.Wait()
}
