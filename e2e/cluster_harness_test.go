//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The three-instance harness of the cluster tests: three "fulcrum serve"
// processes on one etcd cluster, their admin APIs on 127.0.0.1, 127.0.0.2
// and 127.0.0.3 (so that redirects between them cross hosts as in
// production), the same admin_token, distinct instance names. Tests kill
// (-9), freeze (SIGSTOP), thaw and restart instances through it; an
// instance keeps its admin address across a restart, so that monitors
// given the three admin URLs (--register A,B,C) find it again.

// clusterToken is the admin_token every instance of a test cluster has.
const clusterToken = "e2e-cluster-admin-token"

// clusterHosts are the instances' loopback addresses, A, B and C.
var clusterHosts = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}

// clusterSessionTTL is the instances' store.etcd.session_ttl: the
// smallest etcd allows, so that leader failover is quick.
const clusterSessionTTL = 2 * time.Second

// fulcrumCluster is three fulcrum instances on one etcd prefix.
type fulcrumCluster struct {
	etcd      *etcdtest.Cluster
	prefix    string
	instances []*clusterInstance
	// hc calls the admin APIs with the admin token (and front doors).
	hc *http.Client
}

// clusterInstance is one "fulcrum serve" of a fulcrumCluster.
type clusterInstance struct {
	name  string // instance.name: fulcrum-a, fulcrum-b, fulcrum-c
	host  string // its loopback address
	admin string // admin API base URL, the same across restarts
	cfg   string // config file
	proc  *balancerProc
	// bin and env, when set, are the binary (fulcrumBin by default) and
	// the extra environment the instance runs with (a failpoint binary,
	// armed).
	bin string
	env []string
}

// startFulcrumCluster starts three instances on etcd under prefix (which
// must be the test's own when etcd is shared) and waits until each serves
// and lists the three in its GET /v1/cluster. extra is YAML added to
// every instance's config (groups, ...).
func startFulcrumCluster(t *testing.T, etcd *etcdtest.Cluster, prefix, extra string) *fulcrumCluster {
	t.Helper()
	return startFulcrumClusterWith(t, etcd, prefix, extra, nil)
}

// startFulcrumClusterWith is startFulcrumCluster with setup, when not
// nil, called on each instance before it starts (to set its bin and env).
func startFulcrumClusterWith(t *testing.T, etcd *etcdtest.Cluster, prefix, extra string, setup func(i int, in *clusterInstance)) *fulcrumCluster {
	t.Helper()
	c := &fulcrumCluster{etcd: etcd, prefix: prefix, hc: tokenClient(t)}
	for i, host := range clusterHosts {
		name := "fulcrum-" + string(rune('a'+i))
		admin := freeAddrOn(t, host)
		cfg := writeConfig(t, `admin: %s
admin_token: %s
shutdown_timeout: 1s
instance: {name: %s}
store:
  etcd:
    endpoints: [%s]
    prefix: %s
    session_ttl: %s
%s`, admin, clusterToken, name, strings.Join(etcd.Endpoints(), ", "), prefix, clusterSessionTTL, extra)
		in := &clusterInstance{name: name, host: host, admin: "http://" + admin, cfg: cfg}
		if setup != nil {
			setup(i, in)
		}
		in.start(t)
		c.instances = append(c.instances, in)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, in := range c.instances {
		waitCluster(ctx, t, c.hc, in.admin, "the three instances in the directory", func(view protocol.Cluster) bool {
			return len(view.Instances) == len(clusterHosts)
		})
	}
	return c
}

// start starts the instance's process on its config and waits until it
// serves at its admin address.
func (in *clusterInstance) start(t *testing.T) {
	t.Helper()
	if in.bin == "" {
		in.proc = startServe(t, "--config", in.cfg)
	} else {
		in.proc = startServeWith(t, in.bin, in.env, "--config", in.cfg)
	}
	if in.proc.admin != in.admin {
		t.Fatalf("%s serves its admin API at %s, want %s", in.name, in.proc.admin, in.admin)
	}
}

// kill9 kills the instance with SIGKILL and waits until it is gone.
func (in *clusterInstance) kill9(ctx context.Context, t *testing.T) {
	t.Helper()
	in.proc.Kill9(ctx, t)
}

// restart starts the instance again (after kill9), on the same config and
// admin address.
func (in *clusterInstance) restart(t *testing.T) { in.start(t) }

// freeze stops the instance with SIGSTOP and returns once every thread of
// it has stopped (kill returns before that).
func (in *clusterInstance) freeze(t *testing.T) {
	t.Helper()
	in.proc.Signal(t, syscall.SIGSTOP)
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, in.proc.Pid(), &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("waiting for %s to stop: %v", in.name, err)
		}
		return
	}
}

// thaw continues a frozen instance (SIGCONT).
func (in *clusterInstance) thaw(t *testing.T) {
	t.Helper()
	in.proc.Signal(t, syscall.SIGCONT)
}

// admins are the instances' admin URLs, A first, for --register.
func (c *fulcrumCluster) admins() []string {
	var out []string
	for _, in := range c.instances {
		out = append(out, in.admin)
	}
	return out
}

// createGroup creates group name at instance i through the API with
// spec (its front_door a wildcard with port 0, so that every instance
// binds a port of its own), and waits until every instance serves it.
func (c *fulcrumCluster) createGroup(ctx context.Context, t *testing.T, i int, name string, spec map[string]any) {
	t.Helper()
	body := map[string]any{"front_door": "0.0.0.0:0"}
	for k, v := range spec {
		body[k] = v
	}
	mustCall(ctx, t, c.hc, http.MethodPut, c.instances[i].admin+"/v1/groups/"+name, body, http.StatusCreated, nil)
	for _, in := range c.instances {
		waitGroup(ctx, t, c.hc, in.admin, name, func(g groupStatus) error {
			if g.Listening == "" {
				return fmt.Errorf("group %s not listening at %s yet", name, in.name)
			}
			return nil
		})
	}
}

// frontDoor is the base URL of group name's front door on instance i: the
// address it is bound to, with the instance's host for a wildcard.
func (c *fulcrumCluster) frontDoor(ctx context.Context, t *testing.T, i int, name string) string {
	t.Helper()
	in := c.instances[i]
	g := waitGroup(ctx, t, c.hc, in.admin, name, func(g groupStatus) error {
		if g.Listening == "" {
			return fmt.Errorf("group %s not listening at %s", name, in.name)
		}
		return nil
	})
	host, port, err := net.SplitHostPort(g.Listening)
	if err != nil {
		t.Fatalf("group %s at %s listens on %q: %v", name, in.name, g.Listening, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = in.host
	}
	return "http://" + net.JoinHostPort(host, port)
}

// frontDoors are group name's front doors on every instance, A's first.
func (c *fulcrumCluster) frontDoors(ctx context.Context, t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for i := range c.instances {
		out = append(out, c.frontDoor(ctx, t, i, name))
	}
	return out
}

// startBackend runs "fulcrum backend prime" registered with group at
// every instance (--register A,B,C, the admin token to join with) and
// returns it with its URL.
func (c *fulcrumCluster) startBackend(t *testing.T, group string) (*proctest.Proc, string) {
	t.Helper()
	p := proctest.Start(t, "fulcrum backend prime", proctest.Options{Env: []string{"FULCRUM_JOIN_TOKEN=" + clusterToken}},
		fulcrumBin, "backend", "prime", "--listen", "127.0.0.1:0", "--register", strings.Join(c.admins(), ","), "--group", group)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := p.WaitOutput(ctx, t, p.Stdout, listeningLine)
	return p, m[1]
}

// tokenClient is apiClient sending the cluster's admin token.
func tokenClient(t *testing.T) *http.Client {
	hc := apiClient(t)
	hc.Transport = tokenTransport{base: hc.Transport}
	return hc
}

// tokenTransport adds the admin token to every request.
type tokenTransport struct{ base http.RoundTripper }

func (tt tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	return tt.base.RoundTrip(req)
}

// etcdLeader is the etcd member that is its cluster's raft leader now
// (etcd_server_is_leader 1 in its /metrics).
func etcdLeader(ctx context.Context, t *testing.T, etcd *etcdtest.Cluster) *etcdtest.Member {
	t.Helper()
	hc := apiClient(t)
	var leader *etcdtest.Member
	proctest.Poll(ctx, t, "an etcd member that is the leader", func() (bool, string) {
		var states []string
		for _, m := range etcd.Members() {
			if !m.Running() {
				continue
			}
			status, body, err := call(ctx, hc, http.MethodGet, m.ClientURL+"/metrics", nil)
			if err != nil || status != http.StatusOK {
				states = append(states, fmt.Sprintf("%s: %d %v", m.Name, status, err))
				continue
			}
			for _, line := range strings.Split(string(body), "\n") {
				if line == "etcd_server_is_leader 1" {
					leader = m
					return true, ""
				}
			}
			states = append(states, m.Name+": not the leader")
		}
		return false, strings.Join(states, "; ")
	})
	return leader
}

// sharedEtcdPrefix is a prefix of the test's own on a shared etcd.
func sharedEtcdPrefix(t *testing.T) string {
	return "/e2e-" + strings.NewReplacer("/", "-", " ", "-").Replace(strings.ToLower(t.Name())) + "/"
}
