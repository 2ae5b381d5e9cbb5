//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// Three fulcrum instances on a three-member etcd cluster (the harness in
// cluster_harness_test.go). The subtests share one etcd cluster, each on a
// prefix and with instances of its own; tests that stop etcd members have
// a cluster of their own. The analyzer leader's tests are in
// cluster_leader_test.go.
func TestCluster(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	t.Run("follow", func(t *testing.T) {
		t.Parallel()
		testClusterFollow(t, etcd)
	})
	t.Run("if-match race", func(t *testing.T) {
		t.Parallel()
		testClusterIfMatchRace(t, etcd)
	})
	t.Run("instance killed, per-request", func(t *testing.T) {
		t.Parallel()
		testClusterInstanceKillPerRequest(t, etcd)
	})
}

// A replica registered at A is active in C's GET and serves through C's
// front door; a strategy changed at B is what A's GET says and what A's
// front door does: round-robin alternates two replicas, consistent-hash
// (by client address) sends every call of one client to one of them.
func testClusterFollow(t *testing.T, etcd *etcdtest.Cluster) {
	ctx := testContext(t, 60*time.Second)
	c := startFulcrumCluster(t, etcd, sharedEtcdPrefix(t), "")
	a, b, cc := c.instances[0], c.instances[1], c.instances[2]
	c.createGroup(ctx, t, 0, "follow", map[string]any{"binding": "per-request", "strategy": "round-robin"})

	var urls []string
	for range 2 {
		_, u := startPrime(t, "--listen", "127.0.0.1:0")
		var reg struct {
			ID string `json:"id"`
		}
		mustCall(ctx, t, c.hc, http.MethodPost, a.admin+"/v1/groups/follow/replicas", map[string]any{"address": u}, http.StatusCreated, &reg)
		waitGroup(ctx, t, c.hc, cc.admin, "follow", activeReplica(reg.ID))
		urls = append(urls, u)
	}
	atC := c.frontDoor(ctx, t, 2, "follow")
	if ans := getPrime(ctx, t, c.hc, atC+"/prime/7919"); !slices.Contains(urls, ans.ServedBy) {
		t.Errorf("call through C's front door served by %q, want one of the replicas registered at A %v", ans.ServedBy, urls)
	}
	for _, in := range []*clusterInstance{a, b} {
		waitGroup(ctx, t, c.hc, in.admin, "follow", func(g groupStatus) error {
			if len(g.Replicas) != 2 {
				return fmt.Errorf("%d replicas at %s, want 2", len(g.Replicas), in.name)
			}
			return nil
		})
	}

	atA := c.frontDoor(ctx, t, 0, "follow")
	served := servedThrough(ctx, t, c, atA, 20)
	if len(served) != 2 || served[urls[0]] != 10 || served[urls[1]] != 10 {
		t.Errorf("round-robin through A's front door: 20 calls served %v, want 10 by each of %v", served, urls)
	}

	mustCall(ctx, t, c.hc, http.MethodPatch, b.admin+"/v1/groups/follow", map[string]any{"strategy": "consistent-hash"}, http.StatusOK, nil)
	for _, in := range []*clusterInstance{a, cc} {
		waitGroup(ctx, t, c.hc, in.admin, "follow", func(g groupStatus) error {
			if g.Strategy != "consistent-hash" {
				return fmt.Errorf("strategy at %s %q, want consistent-hash (changed at B)", in.name, g.Strategy)
			}
			return nil
		})
	}
	served = servedThrough(ctx, t, c, atA, 20)
	if len(served) != 1 {
		t.Errorf("consistent-hash (changed at B) through A's front door: 20 calls of one client served %v, want all by one replica", served)
	}
}

// servedThrough makes n calls through the front door at door, one after
// the other, and counts them by the replica that served each.
func servedThrough(ctx context.Context, t *testing.T, c *fulcrumCluster, door string, n int) map[string]int {
	t.Helper()
	served := map[string]int{}
	for i := range n {
		served[getPrime(ctx, t, c.hc, door+"/prime/"+strconv.Itoa(7919+2*i)).ServedBy]++
	}
	return served
}

// Two admins change one group at once, at B and at C, both with the
// If-Match of the revision they read: exactly one change is applied, the
// other gets 412 revision_mismatch with the current revision. Five rounds,
// each started together.
func testClusterIfMatchRace(t *testing.T, etcd *etcdtest.Cluster) {
	ctx := testContext(t, 60*time.Second)
	c := startFulcrumCluster(t, etcd, sharedEtcdPrefix(t), "")
	c.createGroup(ctx, t, 0, "race", map[string]any{"binding": "per-request", "strategy": "round-robin"})
	racers := []*clusterInstance{c.instances[1], c.instances[2]}
	strategies := []string{"random", "least-connections"}
	var rev int64
	for round := range 5 {
		// Both racers see the same revision, the last round's, before
		// they race.
		prev := rev
		rev = waitGroup(ctx, t, c.hc, racers[0].admin, "race", func(g groupStatus) error {
			if g.Revision <= prev {
				return fmt.Errorf("revision %d at %s, want above %d", g.Revision, racers[0].name, prev)
			}
			return nil
		}).Revision
		for _, in := range racers {
			waitGroup(ctx, t, c.hc, in.admin, "race", func(g groupStatus) error {
				if g.Revision != rev {
					return fmt.Errorf("revision %d at %s, want %d", g.Revision, in.name, rev)
				}
				return nil
			})
		}
		type answer struct {
			status int
			body   []byte
			err    error
		}
		answers := make(chan answer, len(racers))
		start := make(chan struct{})
		for i, in := range racers {
			go func() {
				<-start
				status, body, err := callIfMatch(ctx, c.hc, http.MethodPatch, in.admin+"/v1/groups/race",
					map[string]any{"strategy": strategies[(i+round)%2]}, rev)
				answers <- answer{status, body, err}
			}()
		}
		close(start)
		var statuses []int
		var mismatch []byte
		for range racers {
			a := <-answers
			if a.err != nil {
				t.Fatalf("round %d: PATCH with If-Match %d: %v", round, rev, a.err)
			}
			statuses = append(statuses, a.status)
			if a.status == http.StatusPreconditionFailed {
				mismatch = a.body
			}
		}
		slices.Sort(statuses)
		if !slices.Equal(statuses, []int{http.StatusOK, http.StatusPreconditionFailed}) {
			t.Fatalf("round %d: two PATCHes with If-Match %d at B and C answered %v, want exactly one 200 and one 412", round, rev, statuses)
		}
		var e struct {
			Error struct {
				Code     string `json:"code"`
				Revision int64  `json:"revision"`
			} `json:"error"`
		}
		if err := json.Unmarshal(mismatch, &e); err != nil || e.Error.Code != "revision_mismatch" || e.Error.Revision <= rev {
			t.Fatalf("round %d: the 412 says %s, want code revision_mismatch and a revision above %d", round, mismatch, rev)
		}
	}
}

// callIfMatch is call with If-Match: "<rev>".
func callIfMatch(ctx context.Context, hc *http.Client, method, url string, body any, rev int64) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-Match", strconv.Quote(strconv.FormatInt(rev, 10)))
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// A per-request group on three instances, Go clients given all three
// front doors (spread over them) calling as fast as they can: kill -9 of
// instance B fails only calls in flight there at the kill (counted by the
// clients), every client's later calls succeed through A and C, and B
// restarted serves the group again.
func testClusterInstanceKillPerRequest(t *testing.T, etcd *etcdtest.Cluster) {
	ctx := testContext(t, 60*time.Second)
	c := startFulcrumCluster(t, etcd, sharedEtcdPrefix(t), "")
	c.createGroup(ctx, t, 0, "perreq", map[string]any{"binding": "per-request", "strategy": "round-robin"})
	for range 2 {
		c.startBackend(t, "perreq")
	}
	for _, in := range c.instances {
		waitActive(ctx, t, c, in, "perreq", 2)
	}
	doors := c.frontDoors(ctx, t, "perreq")

	const clients = 6
	l := startClusterLoad(t, doors, clients, 0)
	proctest.Poll(ctx, t, "every client served 20 times", func() (bool, string) { return l.servedSince(make([]int64, clients), 20) })
	if f := l.failures(); len(f) > 0 {
		t.Fatalf("calls failed before any kill: %v", f)
	}

	victim := c.instances[1]
	l.watch.watchDoor(hostPort(doors[1]))
	victim.kill9(ctx, t)
	inflight := l.watch.unwatch()
	before := l.oks()
	proctest.Poll(ctx, t, "every client served 20 times since the kill", func() (bool, string) { return l.servedSince(before, 20) })
	l.stop()
	failed := l.failures()
	t.Logf("kill -9 of %s: %d calls in flight at its front door, %d failed: %v; successful calls per client %v", victim.name, inflight, len(failed), failed, l.oks())
	if len(failed) > inflight {
		t.Errorf("%d calls failed, more than the %d in flight at %s's front door at the kill: %v", len(failed), inflight, victim.name, failed)
	}

	victim.restart(t)
	waitActive(ctx, t, c, victim, "perreq", 2)
	if ans := getPrime(ctx, t, c.hc, c.frontDoor(ctx, t, 1, "perreq")+"/prime/7919"); ans.ServedBy == "" {
		t.Errorf("call through restarted %s's front door: %+v", victim.name, ans)
	}
}

// waitActive waits until group name has n active replicas at in.
func waitActive(ctx context.Context, t *testing.T, c *fulcrumCluster, in *clusterInstance, name string, n int) groupStatus {
	t.Helper()
	return waitGroup(ctx, t, c.hc, in.admin, name, func(g groupStatus) error {
		active := 0
		for _, r := range g.Replicas {
			if r.State == "active" {
				active++
			}
		}
		if active != n {
			return fmt.Errorf("%d active replicas at %s, want %d: %+v", active, in.name, n, g.Replicas)
		}
		return nil
	})
}

// The etcd leader member killed with kill -9 while Go clients call a
// per-request group through all three instances: no call fails, and once
// the two members left have elected a leader, admin writes at every
// instance work and reach the others.
func TestClusterEtcdLeaderKilled(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	c := startFulcrumCluster(t, etcd, "/e2e-etcd-leader/", "")
	c.createGroup(ctx, t, 0, "steady", map[string]any{"binding": "per-request", "strategy": "round-robin"})
	for range 2 {
		c.startBackend(t, "steady")
	}
	for _, in := range c.instances {
		waitActive(ctx, t, c, in, "steady", 2)
	}
	const clients = 3
	l := startClusterLoad(t, c.frontDoors(ctx, t, "steady"), clients, 5*time.Millisecond)
	proctest.Poll(ctx, t, "every client served 20 times", func() (bool, string) { return l.servedSince(make([]int64, clients), 20) })

	leader := etcdLeader(ctx, t, etcd)
	leader.Kill()
	t.Logf("killed etcd member %s, the leader", leader.Name)
	if err := etcd.WaitHealthy(ctx); err != nil {
		t.Fatalf("the etcd members left: %v", err)
	}

	// Writes at every instance, each seen by the others.
	for i, in := range c.instances {
		strategy := []string{"random", "least-connections", "round-robin"}[i]
		mustCall(ctx, t, c.hc, http.MethodPatch, in.admin+"/v1/groups/steady", map[string]any{"strategy": strategy}, http.StatusOK, nil)
		for _, other := range c.instances {
			waitGroup(ctx, t, c.hc, other.admin, "steady", func(g groupStatus) error {
				if g.Strategy != strategy {
					return fmt.Errorf("strategy at %s %q, want %s (changed at %s)", other.name, g.Strategy, strategy, in.name)
				}
				return nil
			})
		}
	}
	before := l.oks()
	proctest.Poll(ctx, t, "every client served 20 times since the writes", func() (bool, string) { return l.servedSince(before, 20) })
	l.stop()
	if f := l.failures(); len(f) > 0 {
		t.Errorf("%d calls failed with etcd's leader killed, want none: %v", len(f), f)
	}
}

// Every etcd member stopped while Go clients call a per-request group
// through all three instances: serving goes on (no call fails), admin
// writes get 503 naming etcd, /readyz says so; with etcd back, writes
// work again and reach every instance.
func TestClusterEtcdAllStopped(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 90*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	c := startFulcrumCluster(t, etcd, "/e2e-etcd-down/", "")
	c.createGroup(ctx, t, 0, "steady", map[string]any{"binding": "per-request", "strategy": "round-robin"})
	for range 2 {
		c.startBackend(t, "steady")
	}
	for _, in := range c.instances {
		waitActive(ctx, t, c, in, "steady", 2)
	}
	const clients = 3
	l := startClusterLoad(t, c.frontDoors(ctx, t, "steady"), clients, 5*time.Millisecond)
	proctest.Poll(ctx, t, "every client served 20 times", func() (bool, string) { return l.servedSince(make([]int64, clients), 20) })

	for _, m := range etcd.Members() {
		m.Stop()
	}
	for _, in := range c.instances {
		status, body, err := call(ctx, c.hc, http.MethodPatch, in.admin+"/v1/groups/steady", map[string]any{"strategy": "random"})
		if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(string(body), "etcd") {
			t.Errorf("PATCH at %s with etcd down: %d %v %s, want 503 naming etcd", in.name, status, err, body)
		}
		status, body, err = call(ctx, c.hc, http.MethodGet, in.admin+"/readyz", nil)
		if err != nil || !strings.Contains(string(body), "etcd") {
			t.Errorf("/readyz at %s with etcd down: %d %v %s, want it to name etcd", in.name, status, err, body)
		}
	}
	before := l.oks()
	proctest.Poll(ctx, t, "every client served 20 times with etcd down", func() (bool, string) { return l.servedSince(before, 20) })

	for _, m := range etcd.Members() {
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := etcd.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	proctest.Poll(ctx, t, "an admin write at A with etcd back", func() (bool, string) {
		status, body, err := call(ctx, c.hc, http.MethodPatch, c.instances[0].admin+"/v1/groups/steady", map[string]any{"strategy": "least-connections"})
		return err == nil && status == http.StatusOK, fmt.Sprintf("%d %v %s", status, err, body)
	})
	for _, in := range c.instances {
		waitGroup(ctx, t, c.hc, in.admin, "steady", func(g groupStatus) error {
			if g.Strategy != "least-connections" {
				return fmt.Errorf("strategy at %s %q, want least-connections", in.name, g.Strategy)
			}
			return nil
		})
	}
	l.stop()
	if f := l.failures(); len(f) > 0 {
		t.Errorf("%d calls failed with etcd down and back, want none: %v", len(f), f)
	}
}
