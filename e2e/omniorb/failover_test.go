//go:build linux

package omniorb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// A replica killed with kill -9 gets its clients rebound on their next
// call: an idle client's next calls all succeed on another replica; a
// call in flight at the kill is reissued by omniORB through the front door
// (see below); and the application sees errors only once every replica is
// gone.
func TestKillReplicaRebindsClients(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, 90*time.Second)
	r := o.startRig(ctx, t, rigOpts{})

	type client struct {
		*liveClient
		arg int64
	}
	kinds := []clientKind{cxxClient, cxxClient, cxxClient}
	if o.python != "" {
		kinds = append(kinds, pyClient)
	} else {
		defer needPython(t) // fails on CI, skips the Python part otherwise
	}
	var clients []client
	for i, k := range kinds {
		arg := int64(3_000_000 + i)
		c := o.startLiveClient(t, k, "--arg", fmt.Sprint(arg), r.corbaloc)
		clients = append(clients, client{c, arg})
	}
	bound := func(c client) int { return r.servingOnly(t, c.arg) }
	for i, c := range clients {
		if s := c.batch(ctx, t, 3); s.OK != 3 {
			t.Fatalf("client %d (%s): first calls %+v, want 3 ok", i, c.kind, s)
		}
		r.waitServed(ctx, t, c.arg, 3)
	}
	victim := bound(clients[0])
	before := make([][]int, len(clients))
	for i, c := range clients {
		before[i] = r.servedBy(t, c.arg)
	}
	r.servers[victim].Kill9(ctx, t)

	// Idle clients: the next calls all succeed, on live replicas. (The
	// clients call at once: a client whose retry the front door forwards
	// to the dead replica before its health probe noticed retries again
	// after omniORB's one-second back-off.)
	for _, c := range clients {
		c.startBatch(t, 3)
	}
	for i, c := range clients {
		if s := c.waitBatch(ctx, t); s.OK != 3 {
			t.Errorf("client %d (%s): after replica %d died: %+v, want 3 ok", i, c.kind, victim, s)
		}
		after := r.waitServed(ctx, t, c.arg, 6)
		if after[victim] != before[i][victim] {
			t.Errorf("client %d: the dead replica %d served calls", i, victim)
		}
		moved := 0
		for j := range after {
			moved += after[j] - before[i][j]
		}
		if moved != 3 {
			t.Errorf("client %d: replicas served %d of its 3 calls after the kill (%v -> %v)", i, moved, before[i], after)
		}
	}

	// A call in flight when its replica dies: a slow client (prime_count
	// of 10^6 takes about 0.2 s) is bound to a live replica; that replica
	// is killed during its second call. The call fails there with
	// COMM_FAILURE (completion MAYBE), but the reference had been forwarded,
	// and omniORB then reissues the call through the original reference:
	// the front door binds it to a live replica and it succeeds. The
	// application sees no error; the call ran on two replicas.
	const slowArg = 1_000_000
	slow := o.startLiveClient(t, cxxClient, "--op", "prime_count", "--arg", fmt.Sprint(slowArg), r.corbaloc)
	if s := slow.batch(ctx, t, 1); s.OK != 1 {
		t.Fatalf("slow client: first call %+v", s)
	}
	r.waitServed(ctx, t, slowArg, 1)
	now := r.servingOnly(t, slowArg)
	if now == victim {
		t.Fatalf("the slow client was bound to the dead replica %d", victim)
	}
	slow.startBatch(t, 2)
	proctest.Poll(ctx, t, "the slow client's second call in flight", func() (bool, string) {
		n := r.servers[now].callsWithArg(t, slowArg)
		return n >= 2, fmt.Sprintf("%d calls", n)
	})
	r.servers[now].Kill9(ctx, t)
	s := slow.waitBatch(ctx, t)
	if s.OK != 2 || s.CommFailure+s.Transient+s.Other != 0 || s.Sends < 4 {
		t.Errorf("slow client across the death of replica %d: %+v; want both calls ok, the one in flight reissued (at least 4 requests)", now, s)
	}
	by := r.waitServed(ctx, t, slowArg, 4)
	if by[now] != 2 || by[victim] != 0 {
		t.Errorf("slow client's calls per replica %v: want 2 begun on replica %d (one cut short), the reissued one and the next on the last replica", by, now)
	}
	t.Logf("slow client: %+v; calls begun per replica %v", s, by)

	// The last replica gone: the application sees errors, at once.
	for i, srv := range r.servers {
		if i != victim && i != now {
			srv.Kill9(ctx, t)
		}
	}
	waitDown(ctx, t, r, len(r.servers))
	for _, c := range clients {
		c.startBatch(t, 1)
	}
	for i, c := range clients {
		s := c.waitBatch(ctx, t)
		if s.OK != 0 || s.Transient != 1 {
			t.Errorf("client %d (%s) with no replica left: %+v, want the call failed with TRANSIENT", i, c.kind, s)
		}
	}
}

// waitDown waits until n replicas of the group are down.
func waitDown(ctx context.Context, t *testing.T, r *rig, n int) {
	t.Helper()
	proctest.Poll(ctx, t, fmt.Sprintf("%d replicas down", n), func() (bool, string) {
		g := r.bal.group(ctx, t, groupName)
		down := 0
		for _, rep := range g.Replicas {
			if rep.State == "down" {
				down++
			}
		}
		return down == n, fmt.Sprintf("%+v", g.Replicas)
	})
}

// The contrast: a client on a replica's own IOR (never forwarded) gets
// COMM_FAILURE for the call in flight when the replica dies, and
// TRANSIENT for the calls after it; omniORB retries nothing.
func TestKillServerUnderDirectClient(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	srv := o.startServer(ctx, t, "server", 0)
	const slowArg = 1_000_000
	c := o.startLiveClient(t, cxxClient, "--op", "prime_count", "--arg", fmt.Sprint(slowArg), "--per-call", srv.ior)
	if s := c.batch(ctx, t, 1); s.OK != 1 {
		t.Fatalf("first call: %+v", s)
	}
	c.startBatch(t, 2)
	proctest.Poll(ctx, t, "the second call in flight", func() (bool, string) {
		n := srv.callsWithArg(t, slowArg)
		return n >= 2, fmt.Sprintf("%d calls", n)
	})
	srv.Kill9(ctx, t)
	// The call after it fails too: TRANSIENT (connection refused), or
	// COMM_FAILURE when omniORB still had the dying connection.
	s := c.waitBatch(ctx, t)
	lines := jsonLines[callLine](t, c.Stdout.String(), func(l string) bool { return strings.HasPrefix(l, `{"call"`) })
	if s.OK != 0 || s.Sends != 2 || len(lines) != 3 || lines[1].Error != "COMM_FAILURE" || lines[2].OK {
		t.Errorf("direct client across its server's death: %+v, calls %+v; want COMM_FAILURE for the call in flight, the next failing, no retry", s, lines)
	}
}

// Per-request mode: the client's reference is the front door's, never
// forwarded, so a call in flight when its replica dies is answered by the
// front door with COMM_FAILURE, which omniORB does not retry; later calls
// go to the live replicas.
func TestKillReplicaPerRequest(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	r := o.startRig(ctx, t, rigOpts{binding: "per-request", report: "1h"})
	const slowArg = 1_000_000
	c := o.startLiveClient(t, cxxClient, "--op", "prime_count", "--arg", fmt.Sprint(slowArg), "--per-call", r.corbaloc)
	if s := c.batch(ctx, t, 1); s.OK != 1 {
		t.Fatalf("first call: %+v", s)
	}
	before := r.waitServed(ctx, t, slowArg, 1)
	c.startBatch(t, 4)
	busy := -1
	proctest.Poll(ctx, t, "the second call in flight", func() (bool, string) {
		now := r.servedBy(t, slowArg)
		for i := range now {
			if now[i] > before[i] {
				busy = i
				return true, ""
			}
		}
		return false, fmt.Sprint(now)
	})
	r.servers[busy].Kill9(ctx, t)
	s := c.waitBatch(ctx, t)
	if s.OK != 3 || s.CommFailure != 1 || s.Transient+s.Other != 0 {
		t.Errorf("per-request client across the death of replica %d: %+v; want the call in flight failed with COMM_FAILURE, the other three ok", busy, s)
	}
	for _, l := range jsonLines[callLine](t, c.Stdout.String(), func(l string) bool { return strings.HasPrefix(l, `{"call"`) }) {
		if l.Peer != r.front && l.OK {
			t.Errorf("call %d answered from %s, want the front door %s", l.Call, l.Peer, r.front)
		}
	}
	by := r.servedBy(t, slowArg)
	if by[busy] != before[busy]+1 {
		t.Errorf("the dead replica %d began %d calls after the kill (%v -> %v)", busy, by[busy]-before[busy]-1, before, by)
	}
}
