//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// leaderGauge is an instance's fulcrum_leader{group="shared"} line.
var leaderGauge = regexp.MustCompile(`(?m)^fulcrum_leader\{group="shared"\} (\d)$`)

// leads reads whether the instance at admin leads group shared, from its
// /metrics (false while the series is absent).
func leads(ctx context.Context, t *testing.T, hc *http.Client, admin string) bool {
	t.Helper()
	status, body, err := call(ctx, hc, http.MethodGet, admin+"/metrics", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %v", admin, status, err)
	}
	m := leaderGauge.FindSubmatch(body)
	return m != nil && string(m[1]) == "1"
}

// Two fulcrum serve processes on one etcd run the analyzer election: one
// leads the group (fulcrum_leader on /metrics), and when it shuts down it
// resigns, so that the other leads at once, well within the session TTL.
func TestServeOnEtcdElectsOneLeader(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{})
	hc := apiClient(t)
	cfgFor := func(host, name string) string {
		return writeConfig(t, "admin: %s:0\ninstance: {name: %s}\nstore:\n  etcd:\n    endpoints: [%s]\n    prefix: /e2e-leader/\n    session_ttl: 3s\n", host, name, strings.Join(etcd.Endpoints(), ", "))
	}
	a := startServe(t, "--config", cfgFor("127.0.0.1", "fulcrum-a"))
	b := startServe(t, "--config", cfgFor("127.0.0.2", "fulcrum-b"))
	mustCall(ctx, t, hc, http.MethodPut, a.admin+"/v1/groups/shared", map[string]any{"front_door": "127.0.0.1:0"}, http.StatusCreated, nil)

	procs := []*balancerProc{a, b}
	var lead, other *balancerProc
	for lead == nil {
		la, lb := leads(ctx, t, hc, a.admin), leads(ctx, t, hc, b.admin)
		switch {
		case la && lb:
			t.Fatal("both instances lead group shared")
		case la:
			lead, other = procs[0], procs[1]
		case lb:
			lead, other = procs[1], procs[0]
		}
		if ctx.Err() != nil {
			t.Fatal("no instance leads group shared")
		}
	}

	// The leader shuts down and resigns: the other leads within the TTL.
	lead.Signal(t, syscall.SIGTERM)
	start := time.Now()
	if code := lead.Exit(ctx, t); code != 0 {
		t.Fatalf("leader exited %d after SIGTERM", code)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for !leads(wctx, t, hc, other.admin) {
		if wctx.Err() != nil {
			t.Fatalf("the other instance does not lead within the session TTL (3s) of the leader's shutdown")
		}
	}
	t.Logf("the other instance leads %v after the leader's SIGTERM", time.Since(start).Round(time.Millisecond))
	status, body, err := call(ctx, hc, http.MethodGet, other.admin+"/metrics", nil)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`fulcrum_leadership_changes_total{group="shared",to="leader"} %d`, 1)) {
		t.Errorf("the new leader's /metrics: %d %v; want fulcrum_leadership_changes_total{group=\"shared\",to=\"leader\"} 1", status, err)
	}
}
