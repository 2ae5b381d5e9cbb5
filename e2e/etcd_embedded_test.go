//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// embeddedInstance is one "fulcrum serve --etcd-embedded" of a test.
type embeddedInstance struct {
	name, host, client, data string
	args                     []string
	bal                      *balancerProc
}

// Three fulcrum serve --etcd-embedded processes, on 127.0.0.1, .2 and .3,
// form an etcd cluster among themselves with nothing else running: each
// lists the three in GET /v1/cluster, its etcd endpoint its own member; a
// group created at one instance is visible at the others; after a kill -9
// of one, the other two (a quorum of 2 of 3) still take admin writes and
// see each other's; a reload of the unchanged file requires no restart;
// the killed one started again on its data directory catches up; SIGTERM
// stops an instance (its member last) with exit 0.
func TestServeEmbeddedEtcdThreeInstances(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)
	insts := []*embeddedInstance{{name: "fa", host: "127.0.0.1"}, {name: "fb", host: "127.0.0.2"}, {name: "fc", host: "127.0.0.3"}}
	var peers []string
	for _, in := range insts {
		peers = append(peers, in.name+"=http://"+freeAddrOn(t, in.host))
		in.client = "http://" + freeAddrOn(t, in.host)
	}
	for i, in := range insts {
		dataDir := filepath.Join(t.TempDir(), "data")
		cfg := writeConfig(t, "admin: %s:0\ndata_dir: %s\ninstance: {name: %s}\n", in.host, dataDir, in.name)
		in.args = []string{"serve", "--config", cfg, "--etcd-embedded", "--etcd-peers", strings.Join(peers, ","), "--etcd-client", in.client}
		in.data = filepath.Join(dataDir, "etcd") // the default
		if i == 2 {
			in.data = filepath.Join(t.TempDir(), "member")
			in.args = append(in.args, "--etcd-data", in.data)
		}
	}
	// All three start at once: none is ready before a quorum is.
	procs := make([]*balancerProc, len(insts))
	for i, in := range insts {
		procs[i] = &balancerProc{Proc: startProc(t, "fulcrum serve "+in.name, in.args...)}
	}
	for i, in := range insts {
		in.bal = waitEmbeddedServing(ctx, t, procs[i], in)
	}
	for _, in := range insts {
		if _, err := os.Stat(filepath.Join(in.data, "member", "wal")); err != nil {
			t.Errorf("%s: the member's data is not in %s: %v", in.name, in.data, err)
		}
	}

	// GET /v1/cluster at fb: the three instances, and etcd at fb's own
	// member, etcd 3.7.
	proctest.Poll(ctx, t, "the three instances in fb's GET /v1/cluster", func() (bool, string) {
		c, names, state := embeddedCluster(ctx, hc, insts[1].bal.admin)
		if c.Mode != protocol.ClusterModeCluster || names != "fa,fb,fc" || c.Etcd == nil || len(c.Etcd.Endpoints) != 1 {
			return false, state
		}
		ep := c.Etcd.Endpoints[0]
		if ep.Endpoint != insts[1].client || !ep.Reachable || !strings.HasPrefix(ep.Version, "3.7.") {
			t.Fatalf("fb's etcd endpoint %+v, want its member %s, reachable, version 3.7", ep, insts[1].client)
		}
		return true, ""
	})

	// A group created at fa is visible at fb and fc.
	putGroup := func(at *embeddedInstance, name string) {
		t.Helper()
		mustCall(ctx, t, hc, http.MethodPut, at.bal.admin+"/v1/groups/"+name, map[string]any{"front_door": "127.0.0.1:0", "binding": "per-request"}, http.StatusCreated, nil)
	}
	putGroup(insts[0], "made-at-a")
	for _, in := range insts[1:] {
		waitGroup(ctx, t, hc, in.bal.admin, "made-at-a", func(groupStatus) error { return nil })
	}

	// A reload of the unchanged file requires no restart: the store's
	// endpoints the member gave are not the file's.
	var reloaded struct {
		RestartRequired []string `json:"restart_required"`
	}
	mustCall(ctx, t, hc, http.MethodPost, insts[0].bal.admin+"/v1/reload", nil, http.StatusOK, &reloaded)
	if len(reloaded.RestartRequired) != 0 {
		t.Errorf("reload of an unchanged file: restart_required %v, want none", reloaded.RestartRequired)
	}

	// fa killed: fb and fc are a quorum; once they have a leader (fa may
	// have been etcd's), each takes writes the other sees.
	faID := etcdMemberID(ctx, t, insts[1].client, "fa")
	killed := time.Now()
	insts[0].bal.Kill9(ctx, t)
	waitEtcdLeaderNot(ctx, t, insts[1].client, faID)
	t.Logf("fb and fc have an etcd leader %v after the kill -9 of fa", time.Since(killed).Round(time.Millisecond))
	putGroup(insts[1], "made-at-b")
	waitGroup(ctx, t, hc, insts[2].bal.admin, "made-at-b", func(groupStatus) error { return nil })
	putGroup(insts[2], "made-at-c")
	waitGroup(ctx, t, hc, insts[1].bal.admin, "made-at-c", func(groupStatus) error { return nil })

	// fa started again on its data directory catches up, once its old
	// directory entry has expired (its name is free again).
	proctest.Poll(ctx, t, "fa's directory entry gone at fb", func() (bool, string) {
		_, names, state := embeddedCluster(ctx, hc, insts[1].bal.admin)
		return names == "fb,fc", state
	})
	t.Logf("fa's directory entry gone %v after its kill -9", time.Since(killed).Round(time.Millisecond))
	a := insts[0]
	a.bal = waitEmbeddedServing(ctx, t, &balancerProc{Proc: startProc(t, "fulcrum serve fa again", a.args...)}, a)
	for _, g := range []string{"made-at-a", "made-at-b", "made-at-c"} {
		waitGroup(ctx, t, hc, a.bal.admin, g, func(groupStatus) error { return nil })
	}

	// SIGTERM: the balancer stops, then the member; exit 0, and etcd's
	// own closing is not reported as errors.
	b := insts[1].bal
	b.Signal(t, syscall.SIGTERM)
	if code := b.Exit(ctx, t); code != 0 {
		t.Fatalf("fb exited %d after SIGTERM, want 0", code)
	}
	_, after, _ := strings.Cut(b.Stderr.String(), `msg="shutting down"`)
	for line := range strings.Lines(after) {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("fb logged an error while shutting down: %s", line)
		}
	}
	if !strings.Contains(after, `msg=stopped`) {
		t.Errorf("fb did not log stopped after shutting down:\n%s", after)
	}
}

// waitEmbeddedServing waits until in serves, on the store of its own
// member's client URL.
func waitEmbeddedServing(ctx context.Context, t *testing.T, p *balancerProc, in *embeddedInstance) *balancerProc {
	t.Helper()
	ready := regexp.MustCompile(`msg="embedded etcd member ready" member=` + in.name + ` `)
	p.WaitOutput(ctx, t, p.Stderr, ready)
	m := p.WaitOutput(ctx, t, p.Stderr, servingLine)
	p.admin = m[1]
	if !strings.Contains(p.admin, in.host) {
		t.Fatalf("%s's admin API is at %s, want %s", in.name, p.admin, in.host)
	}
	line := p.WaitOutput(ctx, t, p.Stderr, regexp.MustCompile(`msg="fulcrum serving".*`))
	if !strings.Contains(line[0], "etcd="+in.client+" ") {
		t.Errorf("%s's store is not on its member's client URL %s: %s", in.name, in.client, line[0])
	}
	return p
}

// embeddedCluster is GET /v1/cluster at admin, the names of its instances
// joined with commas, and what it answered (for Poll).
func embeddedCluster(ctx context.Context, hc *http.Client, admin string) (protocol.Cluster, string, string) {
	var c protocol.Cluster
	status, body, err := call(ctx, hc, http.MethodGet, admin+"/v1/cluster", nil)
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &c) != nil {
		return c, "", fmt.Sprintf("%d %s %v", status, body, err)
	}
	var names []string
	for _, in := range c.Instances {
		names = append(names, in.Name)
	}
	return c, strings.Join(names, ","), string(body)
}

// etcdClient is an etcd client of the member at clientURL, closed when
// the test ends.
func etcdClient(t *testing.T, clientURL string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// etcdMemberID is the id of the member named name, asked of the member at
// clientURL.
func etcdMemberID(ctx context.Context, t *testing.T, clientURL, name string) uint64 {
	t.Helper()
	resp, err := etcdClient(t, clientURL).MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.Members {
		if m.Name == name {
			return m.ID
		}
	}
	t.Fatalf("no member %s in %v", name, resp.Members)
	return 0
}

// waitEtcdLeaderNot waits until the member at clientURL follows a leader
// other than the member gone.
func waitEtcdLeaderNot(ctx context.Context, t *testing.T, clientURL string, gone uint64) {
	t.Helper()
	cli := etcdClient(t, clientURL)
	proctest.Poll(ctx, t, "an etcd leader other than the killed member", func() (bool, string) {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		st, err := cli.Status(sctx, clientURL)
		if err != nil {
			return false, err.Error()
		}
		return st.Leader != 0 && st.Leader != gone, fmt.Sprintf("leader %x (killed: %x)", st.Leader, gone)
	})
}

// freeAddrOn is freeAddr on host (a loopback address).
func freeAddrOn(t *testing.T, host string) string {
	t.Helper()
	for range 100 {
		addr := net.JoinHostPort(host, strconv.Itoa(10000+rand.IntN(32768-10000)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: draw again
		}
		ln.Close()
		return addr
	}
	t.Fatalf("no free port on %s below the ephemeral range in 100 draws", host)
	return ""
}
