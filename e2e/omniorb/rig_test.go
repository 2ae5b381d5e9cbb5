//go:build linux

package omniorb

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// groupName is the group every test of this package balances.
const groupName = "prime"

// rigOpts describe a balancer with one GIOP group of omniORB replicas.
type rigOpts struct {
	binding  string // on-demand (default), per-session, per-request
	strategy string // default round-robin
	locate   string // giop.locate: forward (default) or here
	agents   bool   // put each replica behind "fulcrum agent giop"
	replicas int    // default 3
	params   string // the strategy's params, a YAML flow mapping; "" none
	// report is the group's report_interval, default 100ms. Each analyzer
	// step (one per interval) publishes a new snapshot, and round-robin
	// starts each snapshot's turn at a random replica: tests of the turn
	// order use a long interval so that one snapshot serves them.
	report string
	// unreported: with agents, do not wait for their first load report
	// (a long report interval).
	unreported bool
	// frontDoor is the group's front_door; default 127.0.0.1:0 (the rig
	// reads the bound address and references from the group's status): a
	// port picked free here could be taken by another test before the
	// balancer binds it.
	frontDoor string
}

// rig is a running balancer with its GIOP group and replicas.
type rig struct {
	orbs     *orbs
	bal      *balancer
	servers  []*server
	agents   []*agent // nil entries without agents
	front    string   // the front door's endpoint as omniORB names it, giop:tcp:127.0.0.1:PORT
	corbaloc string   // the group's reference
	ior      string   // the same, stringified
}

// agent is a running "fulcrum agent giop".
type agent struct {
	*proctest.Proc
	listen string // host:port
	ref    string // the IOR it registered
}

func (a *agent) endpoint() string { return "giop:tcp:" + a.listen }

func groupYAML(t *testing.T, o rigOpts) string {
	if o.binding == "" {
		o.binding = "on-demand"
	}
	if o.strategy == "" {
		o.strategy = "round-robin"
	}
	if o.locate == "" {
		o.locate = "forward"
	}
	if o.report == "" {
		o.report = "100ms"
	}
	if o.frontDoor == "" {
		o.frontDoor = "127.0.0.1:0"
	}
	y := fmt.Sprintf(`  - name: %s
    protocol: giop
    front_door: %s
    binding: %s
    strategy: %s
    report_interval: %s
    health: {interval: 100ms, timeout: 50ms, rise: 1, fall: 1}
    giop: {locate: %s}
`, groupName, o.frontDoor, o.binding, o.strategy, o.report, o.locate)
	if o.params != "" {
		y += "    params: " + o.params + "\n"
	}
	return y
}

// startRig starts the balancer, the replicas (and their agents) and waits
// until every replica is active in the group (and has reported its load,
// with agents).
func (o *orbs) startRig(ctx context.Context, t *testing.T, opts rigOpts) *rig {
	t.Helper()
	if opts.replicas == 0 {
		opts.replicas = 3
	}
	r := &rig{orbs: o, bal: startBalancer(ctx, t, groupYAML(t, opts))}
	g := r.bal.group(ctx, t, groupName)
	if g.Reference.Corbaloc == "" || g.Reference.IOR == "" || g.Listening == "" {
		t.Fatalf("group %s: no reference or listening address: %+v", groupName, g)
	}
	r.front, r.corbaloc, r.ior = "giop:tcp:"+g.Listening, g.Reference.Corbaloc, g.Reference.IOR
	for i := range opts.replicas {
		r.addReplica(ctx, t, i, opts.agents)
	}
	// The group's IOR carries its replicas' repository id once they have
	// registered (before, IDL:omg.org/CORBA/Object:1.0).
	g = r.waitActive(ctx, t, opts.replicas, opts.agents && !opts.unreported)
	r.ior = g.Reference.IOR
	return r
}

// addReplica starts server i (and its agent) and registers it.
func (r *rig) addReplica(ctx context.Context, t *testing.T, i int, withAgent bool) {
	t.Helper()
	s := r.orbs.startServer(ctx, t, fmt.Sprintf("replica %d", i), 0)
	r.servers = append(r.servers, s)
	if !withAgent {
		r.agents = append(r.agents, nil)
		r.bal.register(ctx, t, groupName, s.ior)
		return
	}
	r.agents = append(r.agents, r.startAgent(ctx, t, i, s))
}

var (
	agentListening = regexp.MustCompile(`(?m)^listening on (\S+)$`)
	agentReference = regexp.MustCompile(`(?m)^reference (IOR:[0-9a-fA-F]+)$`)
)

func (r *rig) startAgent(ctx context.Context, t *testing.T, i int, s *server) *agent {
	t.Helper()
	p := proctest.Start(t, fmt.Sprintf("agent %d", i), proctest.Options{}, needFulcrum(t), "agent", "giop",
		"--listen", "127.0.0.1:0", "--target", s.ior, "--register", r.bal.admin, "--group", groupName)
	a := &agent{Proc: p, listen: p.WaitOutput(ctx, t, p.Stdout, agentListening)[1]}
	a.ref = p.WaitOutput(ctx, t, p.Stdout, agentReference)[1]
	return a
}

// waitActive waits until the group has n active replicas (reporting their
// load when reported is true).
func (r *rig) waitActive(ctx context.Context, t *testing.T, n int, reported bool) groupStatus {
	t.Helper()
	var g groupStatus
	proctest.Poll(ctx, t, fmt.Sprintf("%d active replicas in group %s", n, groupName), func() (bool, string) {
		g = r.bal.group(ctx, t, groupName)
		ready := 0
		for _, rep := range g.Replicas {
			if rep.State == "active" && (!reported || rep.Load != nil) {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%+v", g.Replicas)
	})
	return g
}

// replicaOf returns the index of the replica whose endpoint (its server's,
// or its agent's) is peer, or -1.
func (r *rig) replicaOf(peer string) int {
	for i, s := range r.servers {
		if peer == s.endpoint() || r.agents[i] != nil && peer == r.agents[i].endpoint() {
			return i
		}
	}
	return -1
}

// servedBy returns, per replica, the calls logged with argument arg.
func (r *rig) servedBy(t *testing.T, arg int64) []int {
	t.Helper()
	out := make([]int, len(r.servers))
	for i, s := range r.servers {
		out[i] = s.callsWithArg(t, arg)
	}
	return out
}

// waitServed waits until the replicas have logged at least n calls with
// argument arg in all (their output reaches the test asynchronously) and
// returns the calls per replica.
func (r *rig) waitServed(ctx context.Context, t *testing.T, arg int64, n int) []int {
	t.Helper()
	var by []int
	proctest.Poll(ctx, t, fmt.Sprintf("%d calls with argument %d logged by the replicas", n, arg), func() (bool, string) {
		by = r.servedBy(t, arg)
		total := 0
		for _, k := range by {
			total += k
		}
		return total >= n, fmt.Sprint(by)
	})
	return by
}

// peersFor returns the distinct client connections (as the replica saw
// them) that carried calls with argument arg, per replica.
func (r *rig) peersFor(t *testing.T, arg int64) []map[string]int {
	t.Helper()
	out := make([]map[string]int, len(r.servers))
	for i, s := range r.servers {
		out[i] = map[string]int{}
		for _, c := range s.calls(t) {
			if c.Arg == arg {
				out[i][c.Peer]++
			}
		}
	}
	return out
}

// redirected sums the front door's redirects over the group's replicas.
func (r *rig) redirected(ctx context.Context, t *testing.T) uint64 {
	t.Helper()
	var n uint64
	for _, rep := range r.bal.group(ctx, t, groupName).Replicas {
		n += rep.Counters.Redirected
	}
	return n
}

// proxied sums the calls the front door proxied over the group's replicas.
func (r *rig) proxied(ctx context.Context, t *testing.T) uint64 {
	t.Helper()
	var n uint64
	for _, rep := range r.bal.group(ctx, t, groupName).Replicas {
		n += rep.Counters.Proxied
	}
	return n
}

// servingOnly returns the index of the one replica that served calls with
// arg, failing the test when none or several did.
func (r *rig) servingOnly(t *testing.T, arg int64) int {
	t.Helper()
	by := r.servedBy(t, arg)
	idx := -1
	for i, n := range by {
		if n > 0 {
			if idx >= 0 {
				t.Fatalf("calls with argument %d were served by several replicas: %v", arg, by)
			}
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no replica served calls with argument %d", arg)
	}
	return idx
}

// freeAddr returns a loopback address whose port was free a moment ago.
// (A GIOP group's reference carries its port, so its front door is given
// one rather than port 0.)
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
