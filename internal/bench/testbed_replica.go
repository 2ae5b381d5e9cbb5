package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent/nginxreplica"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// Replicas on the testbed (albl, remoting): NGINX in a replica's network
// namespace and cgroup, with "fulcrum agent http" beside it.

const (
	// replicaPort is where NGINX listens in each replica's namespace.
	replicaPort = 80
	// replicaAgentPort is where the agent listens in each replica's
	// namespace (load probes, which NGINX passes on).
	replicaAgentPort = 9100
)

// ServedHeader is the header each NGINX replica adds to its answers
// with its index (1, 2), so the load knows where calls went.
const ServedHeader = nginxreplica.ServedHeader

// replicaObjects are the static objects every replica serves: the ALBL paper's
// 1 KB and 10 KB objects.
var replicaObjects = map[string]int{"/1k": 1024, "/10k": 10 * 1024}

// NGINXExtra is configuration a replica's NGINX adds to replicaNGINXConfig's:
// Main at the top level (load_module), Server in its server block.
type NGINXExtra struct{ Main, Server string }

// StartReplicaNGINX starts NGINX in replica r (namespace and cgroup),
// serving the objects, /healthz, stub_status (to the namespace's loopback
// only), passing /fulcrum/probe to the agent, and whatever extra adds.
// Every answer carries X-Replica: <index>.
func (e *Env) StartReplicaNGINX(ctx context.Context, r *testbed.Replica, index int, extra NGINXExtra) (*Proc, error) {
	prefix, err := e.ScratchDir("nginx-" + r.Name())
	if err != nil {
		return nil, err
	}
	www := filepath.Join(prefix, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	for path, size := range replicaObjects {
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
	cfg, err := replicaNGINXConfig(prefix, errLog, index, extra)
	if err != nil {
		return nil, err
	}
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
	if err := WaitHTTP(ctx, p, TestbedReplicaURL(r)+"/healthz", 20*time.Second); err != nil {
		p.Stop(0)
		return nil, err
	}
	e.Logf("replica %d (%s, %s, %.2f cores%s): NGINX pid %d", index, r.Name(), TestbedReplicaURL(r), r.CPU(), linkNote(r), p.Pid())
	return p, nil
}

func linkNote(r *testbed.Replica) string {
	if l := r.Link(); l != nil {
		return ", " + l.String()
	}
	return ""
}

// TestbedReplicaURL is the replica's base URL from the root namespace.
func TestbedReplicaURL(r *testbed.Replica) string {
	return "http://" + r.Addr().String() + ":" + strconv.Itoa(replicaPort)
}

// replicaNGINXConfig is a replica's NGINX (nginxreplica's template, the
// one docs/agents.md shows): one process (so that the testbed's cgroup
// holds all of it and the parent-death signal reaches it), static files
// with sendfile and an open-file cache (as the ALBL paper's Apache
// servers cached files), no access log; and extra.
func replicaNGINXConfig(prefix, errLog string, index int, extra NGINXExtra) (string, error) {
	return nginxreplica.Render(nginxreplica.Config{
		Dir:        prefix,
		Listen:     strconv.Itoa(replicaPort),
		Agent:      "127.0.0.1:" + strconv.Itoa(replicaAgentPort),
		Index:      index,
		ErrorLog:   errLog,
		OneProcess: true,
		Main:       extra.Main,
		Server:     extra.Server,
	})
}

// StartReplicaAgent starts "fulcrum agent http" in r's network namespace
// (nsenter, which leaves /sys alone so the cgroup stays readable; the
// agent is not in r's cgroup: its CPU is the monitoring's, not the
// replica's). It reads NGINX on the namespace's loopback and the CPU of
// NGINX's cgroup (the hog's included) or, with pids, of those processes
// (the rest of the cgroup as cpu_other), registers the replica in group
// with the balancer's admin API at admin, reports load (cpu, connections
// or rate) there, and answers load probes.
func (e *Env) StartReplicaAgent(ctx context.Context, nsenter string, r *testbed.Replica, admin, group, load string, pids []int) (*Proc, error) {
	cg := r.AcctDir()
	if cg == "" {
		return nil, fmt.Errorf("bench: replica %s has no CPU accounting (cgroup v1 without the cpuacct controller)", r.Name())
	}
	local := "http://127.0.0.1:" + strconv.Itoa(replicaPort)
	args := []string{"--net=/run/netns/" + r.Name(), "--", e.Binary, "agent", "http",
		"--target", local, "--address", TestbedReplicaURL(r),
		"--register", admin, "--group", group,
		"--stub-status", local + "/nginx_status", "--cgroup", cg,
		"--cpus", strconv.FormatFloat(r.CPU(), 'f', -1, 64), "--load", load,
		"--listen", "127.0.0.1:" + strconv.Itoa(replicaAgentPort),
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
