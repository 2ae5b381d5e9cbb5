//go:build linux

package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
	"github.com/fulcrum-lb/fulcrum/internal/failpoint/failpointtest"
)

// TestReplicatedBridgeKilledClientMovesOn is seed 001's fault injection
// point 6 in cluster mode: the bridge dies between appending a request and
// answering it. Three instances on a three-member etcd; instance A runs
// the failpoint binary with bridgeBeforeAnswer armed at its killAt-th
// call; a replicated group with three counters, each behind an agent
// registered with all three instances. The Go client, given the three
// front doors, makes its calls one after another starting at A: A dies of
// SIGKILL after the first reply to call killAt, the client sends that call
// again to B, whose append finds the entry in the log and gets the
// original reply from the agents. No call fails, every call gets the next
// value (none ran twice, none was lost), and the live counters end at the
// number of calls. The subtests share the etcd cluster:
//
//   - agents listing A, B, C stream from A: when A dies they are between
//     two streams as B first asks for the reply; B asks again on each
//     stream that opens;
//   - one agent streams from A (then C), two from C, none from B: the
//     replies cross instances — to A, the entries' reply_to, while A
//     lives; to B for the call A died on, through the reply request B
//     passes on to C (POST /v1/groups/counter/log/ask); to B, the
//     reply_to, for the later calls.
func TestReplicatedBridgeKilledClientMovesOn(t *testing.T) {
	t.Parallel()
	bin := failpointtest.Binary(t)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	t.Run("agents streaming from A", func(t *testing.T) {
		t.Parallel()
		testBridgeKilled(t, etcd, bin, func(a, b, c string) [][]string { return [][]string{{a, b, c}, {a, b, c}, {a, b, c}} })
	})
	t.Run("agents streaming from A and C", func(t *testing.T) {
		t.Parallel()
		testBridgeKilled(t, etcd, bin, func(a, b, c string) [][]string { return [][]string{{a, c, b}, {c, a, b}, {c, b, a}} })
	})
}

// testBridgeKilled runs TestReplicatedBridgeKilledClientMovesOn with three
// replicas whose agents register with the admin URLs orders gives each
// (from the instances' A, B and C).
func testBridgeKilled(t *testing.T, etcd *etcdtest.Cluster, bin string, orders func(a, b, c string) [][]string) {
	ctx := testContext(t, 2*time.Minute)
	const calls, killAt = 240, 120

	c := startFulcrumClusterWith(t, etcd, sharedEtcdPrefix(t), "", func(i int, in *clusterInstance) {
		if i == 0 {
			in.bin = bin
			in.env = []string{failpoint.Env(map[string]string{"bridgeBeforeAnswer": failpoint.Nth(killAt)})}
		}
	})
	a := c.instances[0]
	c.createGroup(ctx, t, 0, replicatedGroup, map[string]any{"binding": "replicated"})
	ad := c.admins()
	var reps []*counterReplica
	for _, register := range orders(ad[0], ad[1], ad[2]) {
		reps = append(reps, startCounterReplica(t, register, replicatedGroup, []string{"FULCRUM_JOIN_TOKEN=" + clusterToken}))
	}
	for _, in := range c.instances {
		waitActive(ctx, t, c, in, replicatedGroup, len(reps))
	}
	doors := c.frontDoors(ctx, t, replicatedGroup)

	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := client.NewTransport(client.Options{Base: base, ClientID: "e2e-bridge-killed", Replicated: true, FrontDoors: doors, Timeout: 20 * time.Second})
	hc := &http.Client{Transport: tr}
	var slowest time.Duration
	slowestAt := 0
	for i := range calls {
		start := time.Now()
		v, err := increment(ctx, hc, doors[0])
		if d := time.Since(start); d > slowest {
			slowest, slowestAt = d, i+1
		}
		if err != nil {
			t.Fatalf("call %d of %d (A's bridge armed to die at call %d): %v", i+1, calls, killAt, err)
		}
		if v != int64(i+1) {
			t.Fatalf("call %d of %d got the value %d, want %d: a call ran twice, was lost or got another's reply", i+1, calls, v, i+1)
		}
	}
	t.Logf("%d calls, the slowest call %d in %v", calls, slowestAt, slowest.Round(time.Millisecond))
	if err := killedBySIGKILL(ctx, a.proc.Proc); err != nil {
		t.Errorf("instance A (bridgeBeforeAnswer at call %d): %v", killAt, err)
	}
	waitCounters(ctx, t, c.hc, reps, calls)
}
