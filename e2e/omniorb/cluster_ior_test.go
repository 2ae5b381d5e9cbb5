//go:build linux

package omniorb

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// startEtcdBalancer runs "fulcrum serve" on etcd (prefix) with its admin
// API on host, as instance name of a cluster.
func startEtcdBalancer(ctx context.Context, t *testing.T, etcd *etcdtest.Cluster, prefix, host, name string) *balancer {
	t.Helper()
	bin := needFulcrum(t)
	cfg := fmt.Sprintf("admin: %s:0\nlog_level: debug\ninstance: {name: %s}\nstore:\n  etcd:\n    endpoints: [%s]\n    prefix: %s\n    session_ttl: 2s\n",
		host, name, strings.Join(etcd.Endpoints(), ", "), prefix)
	path := filepath.Join(t.TempDir(), "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := proctest.Start(t, "fulcrum serve "+name, proctest.Options{}, bin, "serve", "--config", path)
	m := p.WaitOutput(ctx, t, p.Stderr, servingLine)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &balancer{Proc: p, admin: m[1], hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// Three instances on a three-member etcd, admin APIs on 127.0.0.1/.2/.3,
// one per-request GIOP group of two omniORB replicas created at A. The
// group's IOR, as A's GET answers it, lists every instance's front door;
// an omniORB C++ client holding it calls through one instance, which is
// then killed with kill -9: the client's next calls succeed through
// another instance. The first call after the kill may fail with
// COMM_FAILURE (WaitingForReply): it went out on the connection to the
// dead instance, and omniORB does not retry a call that may have run
// (docs/cluster.md, "GIOP clients across instances").
func TestClusterGIOPFailoverGroupIOR(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, 3*time.Minute)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	var bals []*balancer
	for i, host := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		bals = append(bals, startEtcdBalancer(ctx, t, etcd, "/e2e-omniorb-cluster/", host, fmt.Sprintf("fulcrum-%c", 'a'+i)))
	}
	bals[0].do(ctx, t, http.MethodPut, "/v1/groups/"+groupName, map[string]any{
		"protocol": "giop", "front_door": "0.0.0.0:0", "binding": "per-request", "strategy": "round-robin",
		"health": map[string]any{"interval": "100ms", "timeout": "50ms", "rise": 1, "fall": 1},
	}, http.StatusCreated, nil)
	servers := []*server{o.startServer(ctx, t, "replica 0", 0), o.startServer(ctx, t, "replica 1", 0)}
	for _, s := range servers {
		bals[0].register(ctx, t, groupName, s.ior)
	}
	for _, b := range bals {
		waitActiveOn(ctx, t, b, len(servers))
	}

	var ref ior.IOR
	proctest.Poll(ctx, t, "the group's IOR listing the three instances", func() (bool, string) {
		g := bals[0].group(ctx, t, groupName)
		if g.Reference.IOR == "" {
			return false, "no reference"
		}
		r, err := ior.ParseStringified(g.Reference.IOR)
		if err != nil {
			return false, err.Error()
		}
		ref = r
		return len(r.Endpoints()) == len(bals), fmt.Sprintf("endpoints %+v", r.Endpoints())
	})
	c := o.startLiveClient(t, cxxClient, "--arg", "5000000", "--per-call", ref.String())
	if s := c.batch(ctx, t, 3); s.OK != 3 {
		t.Fatalf("first calls %+v, want 3 ok", s)
	}
	used := -1
	for i, b := range bals {
		if proxiedBy(ctx, t, b) > 0 {
			if used >= 0 {
				t.Fatalf("instances %d and %d both proxied the client's calls; it keeps to one connection", used, i)
			}
			used = i
		}
	}
	if used < 0 {
		t.Fatal("no instance proxied the client's calls")
	}

	bals[used].Kill9(ctx, t)
	c.startBatch(t, 3)
	s := c.waitBatch(ctx, t)
	calls := jsonLines[failoverCall](t, c.Stdout.String(), func(l string) bool { return strings.HasPrefix(l, `{"call"`) })
	if len(calls) != 6 {
		t.Fatalf("%d call lines, want 6:\n%s", len(calls), c.Stdout)
	}
	var got []string
	for _, call := range calls[3:] {
		got = append(got, outcome(call))
	}
	t.Logf("omniORB C++ holding the group's IOR, after kill -9 of instance %d: %v", used, got)
	if first := got[0]; first != "ok" && first != "COMM_FAILURE "+minorWaitingForReply {
		t.Errorf("first call after the kill: %s, want ok or COMM_FAILURE %s", first, minorWaitingForReply)
	}
	for i, g := range got[1:] {
		if g != "ok" {
			t.Errorf("call %d after the kill: %s, want ok through another instance", i+2, g)
		}
	}
	var others uint64
	proctest.Poll(ctx, t, "the calls after the kill proxied by the other instances", func() (bool, string) {
		others = 0
		for i, b := range bals {
			if i != used {
				others += proxiedBy(ctx, t, b)
			}
		}
		return others >= uint64(s.OK), fmt.Sprintf("%d proxied, %d ok", others, s.OK)
	})
}
