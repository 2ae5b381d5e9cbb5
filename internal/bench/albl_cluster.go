package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// The albl cluster: seed 003 §5's web cluster on the testbed. Two NGINX
// replicas, each in a network namespace of its own with a CPU quota
// (cgroup) and, in scenario II, replica 1's link shaped by tbf; each with
// "fulcrum agent http" beside it in its namespace, reading NGINX's
// stub_status over the namespace's loopback and the replica's cgroup CPU
// time, and pushing reports to the balancer over the replica's own link.
// The balancer and the clients run in the root namespace.

const (
	// alblGroup is the group the cluster balances.
	alblGroup = "web"
	// alblPort is where NGINX listens in each replica's namespace.
	alblPort = 80
	// alblAgentPort is where the agent listens in each replica's
	// namespace (load probes, which NGINX passes on).
	alblAgentPort = 9100
)

// alblObjects are the static objects every replica serves: seed 003's 1
// KB and 10 KB objects.
var alblObjects = map[string]int{"/1k": 1024, "/10k": 10 * 1024}

// alblCluster is one scenario's running cluster.
type alblCluster struct {
	tb       *testbed.Testbed
	replicas []*testbed.Replica
	nginx    []*Proc
	agents   []*Proc
	hog      *testbed.Hog
	bal      *Balancer
	door     string
}

// close stops the hog and removes the testbed (whatever still runs in
// the replicas is killed); the balancer and agents are the Env's.
func (c *alblCluster) close() {
	if c.hog != nil {
		c.hog.Stop()
	}
	for _, p := range c.agents {
		p.Stop(2 * time.Second) // deregister
	}
	if c.tb != nil {
		_ = c.tb.Close()
	}
}

// startALBLCluster builds sc's cluster: two replicas of cpu cores each,
// their agents reporting load.
func startALBLCluster(ctx context.Context, env *Env, sc alblScenario, cpu float64, load string) (c *alblCluster, err error) {
	if env.NGINX.Path == "" {
		return nil, fmt.Errorf("bench: albl serves its objects with NGINX: %s", env.NGINX.Missing)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("bench: albl starts the agents in the replicas' namespaces with nsenter (util-linux): %w", err)
	}
	tb, err := testbed.New(testbed.Options{})
	if err != nil {
		return nil, fmt.Errorf("bench: albl needs the testbed (network namespaces, cgroups): %w", err)
	}
	c = &alblCluster{tb: tb}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	for i := range 2 {
		spec := testbed.ReplicaSpec{CPU: cpu}
		if i == 0 && sc.Shaped {
			spec.Link = &alblShapedLink
		}
		r, err := tb.AddReplica(spec)
		if err != nil {
			return c, err
		}
		c.replicas = append(c.replicas, r)
		p, err := env.startReplicaNGINX(ctx, r, i+1, nginxExtra{})
		if err != nil {
			return c, err
		}
		c.nginx = append(c.nginx, p)
	}
	if sc.Hog {
		if c.hog, err = c.replicas[0].StartHog(); err != nil {
			return c, err
		}
	}
	if c.bal, err = env.startALBLBalancer(ctx); err != nil {
		return c, err
	}
	c.door = c.bal.FrontDoor(alblGroup)
	for _, r := range c.replicas {
		_, port, _ := strings.Cut(strings.TrimPrefix(c.bal.Admin, "http://"), ":")
		admin := "http://" + r.Gateway().String() + ":" + port
		p, err := env.startReplicaAgent(ctx, nsenter, r, admin, alblGroup, load, nil)
		if err != nil {
			return c, err
		}
		c.agents = append(c.agents, p)
	}
	if err := c.bal.WaitReady(ctx, alblGroup, len(c.replicas), true); err != nil {
		return c, err
	}
	return c, nil
}

// alblShapedLink is scenario II's congested link (seed 003 §5.2): tbf at
// 0.5 Mbit/s, a queue of 10 ms, a 2 KB burst, on what replica 1 sends.
var alblShapedLink = testbed.Link{Rate: "500kbit", Burst: "2kb", Latency: 10 * time.Millisecond}

// nginxExtra is configuration a replica's NGINX adds to alblNGINXConfig's:
// Main at the top level (load_module), Server in its server block.
type nginxExtra struct{ Main, Server string }

// startReplicaNGINX starts NGINX in replica r (namespace and cgroup),
// serving the objects, /healthz, stub_status (to the namespace's loopback
// only), passing /fulcrum/probe to the agent, and whatever extra adds.
// Every answer carries X-Replica: <index>.
func (e *Env) startReplicaNGINX(ctx context.Context, r *testbed.Replica, index int, extra nginxExtra) (*Proc, error) {
	prefix, err := e.ScratchDir("nginx-" + r.Name())
	if err != nil {
		return nil, err
	}
	www := filepath.Join(prefix, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	for path, size := range alblObjects {
		if err := os.WriteFile(filepath.Join(www, strings.TrimPrefix(path, "/")), Payload(size), 0o644); err != nil {
			return nil, err
		}
	}
	name := e.UniqueName(fmt.Sprintf("nginx-replica%d", index))
	// NGINX takes relative paths as relative to its prefix.
	logs, err := filepath.Abs(filepath.Join(e.Dir, "logs"))
	if err != nil {
		return nil, err
	}
	errLog := filepath.Join(logs, name+"-error.log")
	cfg := alblNGINXConfig(prefix, errLog, www, index, extra)
	cfgPath := filepath.Join(logs, name+".conf")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(e.NGINX.Path, "-p", prefix, "-c", cfgPath, "-e", errLog)
	if err := r.Wrap(cmd); err != nil {
		return nil, err
	}
	p, err := e.Start(ProcSpec{Name: name, Path: cmd.Path, Args: cmd.Args[1:]})
	if err != nil {
		return nil, err
	}
	if err := WaitHTTP(ctx, p, alblReplicaURL(r)+"/healthz", 20*time.Second); err != nil {
		p.Stop(0)
		return nil, err
	}
	e.Logf("replica %d (%s, %s, %.2f cores%s): NGINX pid %d", index, r.Name(), alblReplicaURL(r), r.CPU(), linkNote(r), p.Pid())
	return p, nil
}

func linkNote(r *testbed.Replica) string {
	if l := r.Link(); l != nil {
		return ", " + l.String()
	}
	return ""
}

// alblReplicaURL is the replica's base URL from the root namespace.
func alblReplicaURL(r *testbed.Replica) string {
	return "http://" + r.Addr().String() + ":" + strconv.Itoa(alblPort)
}

// alblNGINXConfig is a replica's NGINX: one process (so that the
// testbed's cgroup holds all of it and the parent-death signal reaches
// it), static files with sendfile and an open-file cache (seed 003
// turned Apache's caching on), no access log; and extra.
func alblNGINXConfig(prefix, errLog, www string, index int, extra nginxExtra) string {
	return fmt.Sprintf(`%[8]sdaemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[2]s warn;

events {
    worker_connections 8192;
}

http {
    access_log off;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    sendfile on;
    tcp_nodelay on;
    open_file_cache max=64;
    keepalive_timeout 90s;
    keepalive_requests 100000000;
    default_type application/octet-stream;

    server {
        listen %[4]d backlog=4096;
        root %[3]s;
        add_header %[6]s %[5]d always;
        location = /healthz { return 200 "ok\n"; }
        location = /nginx_status { stub_status; allow 127.0.0.1; deny all; }
        location = /fulcrum/probe { proxy_pass http://127.0.0.1:%[7]d; }
%[9]s    }
}
`, prefix, errLog, www, alblPort, index, alblServedHeader, alblAgentPort, extra.Main, extra.Server)
}

// startReplicaAgent starts "fulcrum agent http" in r's network namespace
// (nsenter, which leaves /sys alone so the cgroup stays readable; the
// agent is not in r's cgroup: its CPU is the monitoring's, not the
// replica's). It reads NGINX on the namespace's loopback and the CPU of
// NGINX's cgroup (the hog's included) or, with pids, of those processes
// (the rest of the cgroup as cpu_other), registers the replica in group
// with the balancer's admin API at admin, reports load (cpu, connections
// or rate) there, and answers load probes.
func (e *Env) startReplicaAgent(ctx context.Context, nsenter string, r *testbed.Replica, admin, group, load string, pids []int) (*Proc, error) {
	cg := r.AcctDir()
	if cg == "" {
		return nil, fmt.Errorf("bench: albl: replica %s has no CPU accounting (cgroup v1 without the cpuacct controller)", r.Name())
	}
	local := "http://127.0.0.1:" + strconv.Itoa(alblPort)
	args := []string{"--net=/run/netns/" + r.Name(), "--", e.Binary, "agent", "http",
		"--target", local, "--address", alblReplicaURL(r),
		"--register", admin, "--group", group,
		"--stub-status", local + "/nginx_status", "--cgroup", cg,
		"--cpus", strconv.FormatFloat(r.CPU(), 'f', -1, 64), "--load", load,
		"--listen", "127.0.0.1:" + strconv.Itoa(alblAgentPort),
	}
	for _, pid := range pids {
		args = append(args, "--pid", strconv.Itoa(pid))
	}
	lines := make(chan string, 1)
	p, err := e.Start(ProcSpec{Name: e.UniqueName("agent-" + r.Name()), Path: nsenter, Args: args, FirstLine: lines})
	if err != nil {
		return nil, err
	}
	if _, err := WaitLine(ctx, p, lines, "listening on ", 40*time.Second); err != nil {
		p.Stop(0)
		return nil, err
	}
	return p, nil
}

// startALBLBalancer starts "fulcrum serve" and makes the albl group
// (alblGroupSpec). Its admin API listens on every address, so that the
// agents reach it from the replicas' namespaces at their gateways.
func (e *Env) startALBLBalancer(ctx context.Context) (*Balancer, error) {
	// --insecure: the admin API listens beyond loopback without a token;
	// only the testbed's namespaces, on this machine, reach it.
	b, err := e.launchBalancer(ctx, func() (string, string, error) {
		addr, err := FreeAddr()
		if err != nil {
			return "", "", err
		}
		_, port, _ := strings.Cut(addr, ":")
		return "0.0.0.0:" + port, "127.0.0.1:" + port, nil
	}, nil, true)
	if err != nil {
		return nil, err
	}
	// The group is made through the admin API, not the config file, so
	// that the runs can patch its strategy without the balancer warning
	// that the config will revert it.
	if err := alblSend(ctx, b, http.MethodPut, "/v1/groups/"+alblGroup, alblGroupSpec); err != nil {
		b.Proc.Stop(0)
		return nil, err
	}
	st, err := b.Group(ctx, alblGroup)
	if err != nil {
		b.Proc.Stop(0)
		return nil, err
	}
	b.doors[alblGroup] = st.Advertise
	e.Logf("albl: front door %s", st.Advertise)
	return b, nil
}

// alblGroupSpec is the albl group: per request (a web switch),
// round-robin until a run patches its strategy, and no health checking —
// no active probes and no passive ejection — so that the strategies alone
// decide where calls go, as with seed 003's LVS switch.
var alblGroupSpec = map[string]any{
	"front_door": "127.0.0.1:0", "binding": "per-request", "strategy": "round-robin", "report_interval": "500ms",
	"health":   map[string]any{"passive": map[string]any{"consecutive_failures": -1}},
	"timeouts": map[string]any{"connect": "10s", "request": "60s", "idle": "90s"},
}

// alblSetStrategy switches the group's strategy and parameters at run time
// (PATCH /v1/groups/{group}).
func alblSetStrategy(ctx context.Context, b *Balancer, group, name string, params map[string]any) error {
	if err := alblSend(ctx, b, http.MethodPatch, "/v1/groups/"+group, map[string]any{"strategy": name, "params": params}); err != nil {
		return fmt.Errorf("bench: setting strategy %s: %w", name, err)
	}
	return nil
}

// alblSend sends a JSON body to the admin API and fails unless it answers
// 200 or 201.
func alblSend(ctx context.Context, b *Balancer, method, path string, body any) error {
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
