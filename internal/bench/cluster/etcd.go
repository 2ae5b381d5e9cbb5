package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// errNoEtcd says etcd is missing and how to install it.
var errNoEtcd = errors.New("cluster: etcd is not installed (apt-get install etcd-server; scripts/test.sh installs it)")

// etcdBinary is the etcd executable: etcd on PATH, or Debian's
// /usr/bin/etcd.
func etcdBinary() (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd", nil
	}
	return "", errNoEtcd
}

// etcdMember is one etcd process of the experiment's cluster.
type etcdMember struct {
	name      string
	clientURL string
	proc      *bench.Proc
}

// startEtcd starts an n-member etcd cluster on loopback (data in the
// environment's scratch space, logs in logs/) and waits until every
// member is healthy.
func startEtcd(ctx context.Context, env *bench.Env, n int) ([]*etcdMember, error) {
	bin, err := etcdBinary()
	if err != nil {
		return nil, err
	}
	dir, err := env.ScratchDir("etcd")
	if err != nil {
		return nil, err
	}
	type addrs struct{ client, peer string }
	var all []addrs
	var initial []string
	for i := range n {
		c, err := bench.FreeAddr()
		if err != nil {
			return nil, err
		}
		p, err := bench.FreeAddr()
		if err != nil {
			return nil, err
		}
		all = append(all, addrs{"http://" + c, "http://" + p})
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i, p))
	}
	var members []*etcdMember
	for i, a := range all {
		name := fmt.Sprintf("m%d", i)
		args := []string{
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", a.client, "--advertise-client-urls", a.client,
			"--listen-peer-urls", a.peer, "--initial-advertise-peer-urls", a.peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "fulcrum-bench-" + filepath.Base(dir),
			"--heartbeat-interval", "50", "--election-timeout", "500",
			"--logger", "zap", "--log-level", "warn",
		}
		p, err := env.Start(bench.ProcSpec{Name: env.UniqueName("etcd-" + name), Path: bin, Args: args})
		if err != nil {
			return nil, err
		}
		members = append(members, &etcdMember{name: name, clientURL: a.client, proc: p})
	}
	for _, m := range members {
		if err := bench.WaitHTTP(ctx, m.proc, m.clientURL+"/health", 30*time.Second); err != nil {
			return nil, err
		}
	}
	env.Logf("etcd: %d members at %s", n, strings.Join(endpoints(members), ","))
	return members, nil
}

// endpoints are the members' client URLs.
func endpoints(ms []*etcdMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.clientURL)
	}
	return out
}
