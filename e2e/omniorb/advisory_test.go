//go:build linux

package omniorb

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// A high advisory moves clients: four clients bound to the only replica,
// then two idle replicas join; the analyzer finds the first replica's
// load high, its agent forwards a share of the clients back to the front
// door, and they are bound to the new replicas, without a failed call.
func TestHighAdvisoryMovesClients(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, 90*time.Second)
	r := o.startRig(ctx, t, rigOpts{strategy: "least-loaded", agents: true, replicas: 1})

	const calls, rate = 400, 50 // 8 s per client
	kinds := []clientKind{cxxClient, cxxClient, cxxClient}
	if o.python != "" {
		kinds = append(kinds, pyClient)
	} else {
		defer needPython(t)
	}
	args := make([]int64, len(kinds))
	ps := make([]*proctest.Proc, len(kinds))
	for i, k := range kinds {
		args[i] = 4_000_000 + int64(i)
		ps[i] = o.startClient(t, k, "--calls", strconv.Itoa(calls), "--rate", strconv.Itoa(rate), "--per-call", "--arg", fmt.Sprint(args[i]), r.corbaloc)
	}
	proctest.Poll(ctx, t, "every client calling replica 0", func() (bool, string) {
		by := make([]int, len(args))
		for i, a := range args {
			by[i] = r.servers[0].callsWithArg(t, a)
			if by[i] < 10 {
				return false, fmt.Sprint(by)
			}
		}
		return true, ""
	})

	r.addReplica(ctx, t, 1, true)
	r.addReplica(ctx, t, 2, true)
	r.waitActive(ctx, t, 3, true)

	// The clients call for 8 s: a move must come well within that.
	moveCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	sawHigh := false
	proctest.Poll(moveCtx, t, "a client moved to replica 1 or 2", func() (bool, string) {
		g := r.bal.group(ctx, t, groupName)
		for _, rep := range g.Replicas {
			sawHigh = sawHigh || rep.Advisory == "high"
		}
		for _, a := range args {
			by := r.servedBy(t, a)
			if by[1]+by[2] > 0 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", g.Replicas)
	})

	moved := 0
	for i, p := range ps {
		code, lines, sum := clientResult(ctx, t, kinds[i], p, nil)
		if code != 0 || sum.OK != calls || sum.CommFailure+sum.Transient+sum.Other != 0 {
			t.Errorf("client %d (%s): exit %d, %+v; want %d calls, all ok", i, kinds[i], code, sum, calls)
		}
		by := r.waitServed(ctx, t, args[i], sum.OK)
		if by[1]+by[2] > 0 {
			moved++
		}
		if kinds[i] == cxxClient {
			// The C++ client says where each call went: first the agent
			// of replica 0, and after a move (one call forwarded, two
			// requests) another agent.
			// A call sent back takes three requests (the agent's
			// forward, the front door's, the new replica); the front
			// door may bind it to the same replica again.
			changes, sentBack := 0, 0
			for j := 1; j < len(lines); j++ {
				if lines[j].Sends > 1 {
					sentBack++
				}
				if lines[j].Peer != lines[j-1].Peer {
					changes++
					if r.replicaOf(lines[j].Peer) < 0 || lines[j].Sends < 2 {
						t.Errorf("client %d: call %d moved to %q in %d requests, want another replica's agent, the call forwarded", i, lines[j].Call, lines[j].Peer, lines[j].Sends)
					}
				}
			}
			if r.replicaOf(lines[0].Peer) != 0 {
				t.Errorf("client %d: first call went to %s, want replica 0's agent %s", i, lines[0].Peer, r.agents[0].endpoint())
			}
			t.Logf("client %d: served per replica %v, sent back %d times, moved %d times", i, by, sentBack, changes)
		}
	}
	if moved == 0 {
		t.Errorf("no client moved off replica 0")
	}
	g := r.bal.group(ctx, t, groupName)
	var rebinds uint64
	for _, rep := range g.Replicas {
		rebinds += rep.Counters.Rebinds
	}
	if !sawHigh && rebinds == 0 {
		t.Errorf("neither a high advisory nor a rebind seen: %+v", g.Replicas)
	}
	t.Logf("%d of %d clients moved; rebinds %d; high advisory seen: %v", moved, len(ps), rebinds, sawHigh)
}
