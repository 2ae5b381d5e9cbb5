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
// registered with all three instances (streaming from A first). The Go
// client, given the three front doors, makes its calls one after another
// starting at A: A dies of SIGKILL after the first reply to call killAt,
// the client sends that call again to B, whose append finds the entry in
// the log and gets the original reply from the agents (a reply request
// passed on between instances). No call fails, every call gets the next
// value (none ran twice, none was lost), and the live counters end at the
// number of calls.
func TestReplicatedBridgeKilledClientMovesOn(t *testing.T) {
	t.Parallel()
	bin := failpointtest.Binary(t)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
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
	var reps []*counterReplica
	for range 3 {
		reps = append(reps, startCounterReplica(t, c.admins(), replicatedGroup, []string{"FULCRUM_JOIN_TOKEN=" + clusterToken}))
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
