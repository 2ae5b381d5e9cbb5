//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// propagationRegistrations is how many registrations the propagation is
// measured over.
const propagationRegistrations = 50

// Two fulcrum serve processes on one real etcd, admin APIs on 127.0.0.1
// and 127.0.0.2: each applies what the other changes, through etcd's
// watch. A group created at A serves at B; a replica registered at A is
// active in B's GET and serves calls through B's front door; a strategy
// changed at B is used by A; a group deleted at A disappears from B. The
// propagation from a registration's 201 at A to the replica active in B's
// GET is logged (p50, p99) over 50 registrations.
func TestServeOnEtcdTwoInstancesFollow(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 120*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{})
	hc := apiClient(t)
	cfgFor := func(host, name string) string {
		return writeConfig(t, "admin: %s:0\ninstance: {name: %s}\nstore:\n  etcd:\n    endpoints: [%s]\n    prefix: /e2e-follow/\n", host, name, strings.Join(etcd.Endpoints(), ", "))
	}
	a := startServe(t, "--config", cfgFor("127.0.0.1", "fulcrum-a"))
	b := startServe(t, "--config", cfgFor("127.0.0.2", "fulcrum-b"))
	if !strings.Contains(b.admin, "127.0.0.2") {
		t.Fatalf("B's admin API is at %s, want 127.0.0.2", b.admin)
	}

	// A group created at A: B binds it too (port 0: a port of its own).
	mustCall(ctx, t, hc, http.MethodPut, a.admin+"/v1/groups/shared", map[string]any{
		"front_door": "127.0.0.1:0", "binding": "per-request", "strategy": "round-robin",
	}, http.StatusCreated, nil)
	atB := waitGroup(ctx, t, hc, b.admin, "shared", func(g groupStatus) error { return nil })

	// A replica registered at A is active at B, and B's front door calls it.
	_, primeURL := startPrime(t, "--listen", "127.0.0.1:0")
	var reg struct {
		ID string `json:"id"`
	}
	mustCall(ctx, t, hc, http.MethodPost, a.admin+"/v1/groups/shared/replicas", map[string]any{"address": primeURL}, http.StatusCreated, &reg)
	waitGroup(ctx, t, hc, b.admin, "shared", activeReplica(reg.ID))
	if ans := getPrime(ctx, t, hc, atB.Advertise+"/prime/7919"); ans.ServedBy != primeURL {
		t.Errorf("call through B's front door served by %q, want the replica registered at A (%s)", ans.ServedBy, primeURL)
	}

	// A strategy changed at B is used by A.
	mustCall(ctx, t, hc, http.MethodPatch, b.admin+"/v1/groups/shared", map[string]any{"strategy": "random"}, http.StatusOK, nil)
	waitGroup(ctx, t, hc, a.admin, "shared", func(g groupStatus) error {
		if g.Strategy != "random" {
			return fmt.Errorf("strategy at A %q, want random (changed at B)", g.Strategy)
		}
		return nil
	})

	// Propagation: registration at A (its 201) → active in B's GET.
	var took []time.Duration
	for i := range propagationRegistrations {
		var r struct {
			ID string `json:"id"`
		}
		mustCall(ctx, t, hc, http.MethodPost, a.admin+"/v1/groups/shared/replicas", map[string]any{"address": fmt.Sprintf("http://127.0.0.1:%d", 20000+i)}, http.StatusCreated, &r)
		start := time.Now()
		waitGroup(ctx, t, hc, b.admin, "shared", activeReplica(r.ID))
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	p := func(q float64) time.Duration { return took[int(q*float64(len(took)-1)+0.5)] }
	t.Logf("propagation, registration at A (201) → active in B's GET, %d registrations: p50 %v, p99 %v, max %v", len(took), p(0.50), p(0.99), took[len(took)-1])

	// A group deleted at A disappears from B.
	mustCall(ctx, t, hc, http.MethodDelete, a.admin+"/v1/groups/shared", nil, http.StatusNoContent, nil)
	for {
		status, body, err := call(ctx, hc, http.MethodGet, b.admin+"/v1/groups/shared", nil)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusNotFound {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("group deleted at A still at B: %d %s", status, body)
		}
	}
}

// activeReplica holds when replica id is active.
func activeReplica(id string) func(groupStatus) error {
	return func(g groupStatus) error {
		r, ok := g.replica(id)
		switch {
		case !ok:
			return fmt.Errorf("replica %s not in group %s", id, g.Name)
		case r.State != "active":
			return fmt.Errorf("replica %s is %s, want active", id, r.State)
		}
		return nil
	}
}

// waitGroup reads group name at admin until cond holds, and returns it;
// it fails the test when ctx ends first.
func waitGroup(ctx context.Context, t *testing.T, hc *http.Client, admin, name string, cond func(groupStatus) error) groupStatus {
	t.Helper()
	for {
		g, err := getGroup(ctx, hc, admin, name)
		if err == nil {
			if err = cond(g); err == nil {
				return g
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s at %s: %v", name, admin, err)
		}
	}
}
