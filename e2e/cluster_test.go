//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// clusterTTL is the instances' session_ttl in these tests.
const clusterTTL = 2 * time.Second

// getCluster reads GET /v1/cluster at admin.
func getCluster(ctx context.Context, hc *http.Client, admin string) (protocol.Cluster, error) {
	status, body, err := call(ctx, hc, http.MethodGet, admin+"/v1/cluster", nil)
	if err != nil {
		return protocol.Cluster{}, err
	}
	if status != http.StatusOK {
		return protocol.Cluster{}, fmt.Errorf("GET /v1/cluster: %d %s", status, body)
	}
	var c protocol.Cluster
	err = json.Unmarshal(body, &c)
	return c, err
}

// instanceIn is instance name of c.
func instanceIn(c protocol.Cluster, name string) (protocol.ClusterInstance, bool) {
	for _, in := range c.Instances {
		if in.Name == name {
			return in, true
		}
	}
	return protocol.ClusterInstance{}, false
}

// waitCluster polls admin's GET /v1/cluster until cond holds, and
// returns it.
func waitCluster(ctx context.Context, t *testing.T, hc *http.Client, admin, what string, cond func(protocol.Cluster) bool) protocol.Cluster {
	t.Helper()
	var c protocol.Cluster
	proctest.Poll(ctx, t, what+" at "+admin, func() (bool, string) {
		var err error
		c, err = getCluster(ctx, hc, admin)
		if err != nil {
			return false, err.Error()
		}
		return cond(c), fmt.Sprintf("%+v", c)
	})
	return c
}

// Two fulcrum serve processes on one etcd, on 127.0.0.1 and 127.0.0.2:
// each lists both in GET /v1/cluster with the front doors its own config
// file declares (another port on each), and etcd's endpoint healthy; a
// GIOP group's IOR lists both front doors; a replica at the other
// instance's front door is refused; fulcrum ctl cluster prints both;
// SIGTERM takes an entry out at once, kill -9 within the session TTL.
func TestClusterDirectoryTwoInstances(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 90*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{})
	hc := apiClient(t)
	httpA, giopA := freeAddr(t), freeAddr(t)
	httpB, giopB := strings.Replace(freeAddr(t), "127.0.0.1", "127.0.0.2", 1), strings.Replace(freeAddr(t), "127.0.0.1", "127.0.0.2", 1)
	cfgFor := func(host, name, ttl, httpDoor, giopDoor string) string {
		return writeConfig(t, `admin: %s:0
instance: {name: %s}
store:
  etcd:
    endpoints: [%s]
    prefix: /e2e-cluster/
    session_ttl: %s
groups:
  - {name: web, front_door: "%s", binding: per-request}
  - {name: orb, protocol: giop, front_door: "%s", binding: per-request}
`, host, name, strings.Join(etcd.Endpoints(), ", "), ttl, httpDoor, giopDoor)
	}
	a := startServe(t, "--config", cfgFor("127.0.0.1", "fulcrum-a", "2s", httpA, giopA))
	b := startServe(t, "--config", cfgFor("127.0.0.2", "fulcrum-b", "2s", httpB, giopB))

	both := func(c protocol.Cluster) bool {
		ia, okA := instanceIn(c, "fulcrum-a")
		ib, okB := instanceIn(c, "fulcrum-b")
		return okA && okB && ia.FrontDoors["web"].Address == httpA && ia.FrontDoors["orb"].Address == giopA &&
			ib.FrontDoors["web"].Address == httpB && ib.FrontDoors["orb"].Address == giopB
	}
	c := waitCluster(ctx, t, hc, a.admin, "both instances with their front doors", both)
	if c.Mode != "cluster" || c.Instance != "fulcrum-a" || c.Etcd == nil || c.Etcd.Prefix != "/e2e-cluster/" || len(c.Etcd.Endpoints) != 1 || !c.Etcd.Endpoints[0].Reachable || !c.Etcd.Endpoints[0].Leader || c.Etcd.Endpoints[0].Version == "" {
		t.Errorf("A's GET /v1/cluster: %+v (etcd %+v)", c, c.Etcd)
	}
	if ia, _ := instanceIn(c, "fulcrum-a"); !ia.Self || ia.AdminURL != a.admin || ia.Version == "" || ia.Started.IsZero() {
		t.Errorf("A in its own answer: %+v", ia)
	}
	if ib, _ := instanceIn(c, "fulcrum-b"); ib.Self || ib.AdminURL != b.admin {
		t.Errorf("B in A's answer: %+v, want admin %s, not self", ib, b.admin)
	}
	waitCluster(ctx, t, hc, b.admin, "both instances with their front doors", both)

	// The GIOP group's IOR at A: A's front door, then B's as an alternate.
	var orb struct {
		FrontDoor string             `json:"front_door"`
		Reference protocol.Reference `json:"reference"`
	}
	mustCall(ctx, t, hc, http.MethodGet, a.admin+"/v1/groups/orb", nil, http.StatusOK, &orb)
	ref, err := ior.Parse(orb.Reference.IOR)
	if err != nil {
		t.Fatalf("orb's IOR at A %q: %v", orb.Reference.IOR, err)
	}
	var eps []string
	for _, ep := range ref.Endpoints() {
		eps = append(eps, ep.Address.HostPort())
	}
	if got, want := strings.Join(eps, " "), giopA+" "+giopB; got != want || len(ref.Profiles) != 1 {
		t.Errorf("orb's IOR at A lists %s in %d profile(s), want %s in one", got, len(ref.Profiles), want)
	}
	if orb.FrontDoor != giopA {
		t.Errorf("orb's stored front_door %q, want the first instance's %s (as created)", orb.FrontDoor, giopA)
	}

	// A replica at B's front door, registered at A: refused, naming B.
	status, body, err := call(ctx, hc, http.MethodPost, a.admin+"/v1/groups/web/replicas", map[string]any{"address": "http://" + httpB})
	if err != nil || status != http.StatusBadRequest || !strings.Contains(string(body), `instance \"fulcrum-b\"`) {
		t.Errorf("replica at B's front door registered at A: %d %s %v; want 400 naming instance fulcrum-b", status, body, err)
	}

	// fulcrum ctl cluster.
	code, out, errOut := run(ctx, t, "fulcrum ctl cluster", "ctl", "cluster", "--admin", a.admin)
	if code != 0 || !regexp.MustCompile(`(?m)^fulcrum-a \*\s+`+regexp.QuoteMeta(a.admin)).MatchString(out) || !strings.Contains(out, "web="+httpB) {
		t.Errorf("ctl cluster: exit %d\n%s%s", code, out, errOut)
	}

	// An instance that shuts down takes its entry out at once (its TTL is
	// 5 s; it is gone well before).
	e := startServe(t, "--config", cfgFor("127.0.0.3", "fulcrum-e", "5s", "127.0.0.3:0", "127.0.0.3:0"))
	waitCluster(ctx, t, hc, a.admin, "fulcrum-e", func(c protocol.Cluster) bool { _, ok := instanceIn(c, "fulcrum-e"); return ok })
	e.Signal(t, syscall.SIGTERM)
	stopped := time.Now()
	gone, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	waitCluster(gone, t, hc, a.admin, "fulcrum-e gone after SIGTERM", func(c protocol.Cluster) bool { _, ok := instanceIn(c, "fulcrum-e"); return !ok })
	t.Logf("entry of an instance stopped with SIGTERM gone from A's view after %v (session_ttl 5s)", time.Since(stopped).Round(time.Millisecond))
	if code := e.Exit(ctx, t); code != 0 {
		t.Errorf("fulcrum-e exited %d after SIGTERM", code)
	}

	// kill -9 of B: its entry expires with its lease.
	b.Kill9(ctx, t)
	killed := time.Now()
	expire, cancel2 := context.WithTimeout(ctx, clusterTTL+3*time.Second)
	defer cancel2()
	c = waitCluster(expire, t, hc, a.admin, "fulcrum-b gone after kill -9", func(c protocol.Cluster) bool { _, ok := instanceIn(c, "fulcrum-b"); return !ok })
	t.Logf("entry of a killed instance gone from A's view after %v (session_ttl %v)", time.Since(killed).Round(time.Millisecond), clusterTTL)
	mustCall(ctx, t, hc, http.MethodGet, a.admin+"/v1/groups/orb", nil, http.StatusOK, &orb)
	if ref, err := ior.Parse(orb.Reference.IOR); err != nil || len(ref.Endpoints()) != 1 || ref.Endpoints()[0].Address.HostPort() != giopA {
		t.Errorf("orb's IOR at A once B is gone: %v %v, want A's front door only", ref, err)
	}
}

// A name held by a live instance: a second instance with that name waits
// one session TTL and exits 1 naming the holder and its admin URL. Once
// the holder is killed, an instance of its name starts after the killed
// one's lease expires.
func TestClusterInstanceNameConflict(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{})
	hc := apiClient(t)
	cfg := func(host string) string {
		return writeConfig(t, "admin: %s:0\ninstance: {name: same}\nstore:\n  etcd:\n    endpoints: [%s]\n    prefix: /e2e-names/\n    session_ttl: 2s\n", host, strings.Join(etcd.Endpoints(), ", "))
	}
	holder := startServe(t, "--config", cfg("127.0.0.1"))

	start := time.Now()
	code, _, errOut := run(ctx, t, "fulcrum serve (same name)", "serve", "--config", cfg("127.0.0.2"))
	took := time.Since(start)
	if code != 1 || !strings.Contains(errOut, `instance name "same" is held by a live instance at `+holder.admin) {
		t.Fatalf("second instance named same: exit %d after %v\n%s\nwant exit 1 naming the holder at %s", code, took, errOut, holder.admin)
	}
	if took < clusterTTL {
		t.Errorf("second instance refused after %v, before one session TTL (%v)", took, clusterTTL)
	}
	t.Logf("second instance of a live name refused after %v (session_ttl %v)", took, clusterTTL)

	holder.Kill9(ctx, t)
	killed := time.Now()
	next := startServe(t, "--config", cfg("127.0.0.2"))
	t.Logf("instance of a killed holder's name serving %v after the kill", time.Since(killed).Round(time.Millisecond))
	c, err := getCluster(ctx, hc, next.admin)
	if err != nil {
		t.Fatal(err)
	}
	if in, ok := instanceIn(c, "same"); !ok || !in.Self || in.AdminURL != next.admin || len(c.Instances) != 1 {
		t.Errorf("GET /v1/cluster of the new holder: %+v", c)
	}
}
