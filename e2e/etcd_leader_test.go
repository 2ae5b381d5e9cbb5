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
	"github.com/fulcrum-lb/fulcrum/protocol"
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
// leads the group (fulcrum_leader on /metrics, leaders in GET
// /v1/cluster); a report at the other is sent to the leader's admin URL
// from the instance directory (307), where it is answered with the
// leader's term, and the loads reported there reach the other's status
// (the leader's load push); when the leader shuts down it resigns, so that the other
// leads at once, well within the session TTL.
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

	// GET /v1/cluster names the leader, at both instances: at the other
	// as soon as its watch of the election has seen the leader's key (it
	// may lag the leader's own view by an etcd round trip).
	leaderName := map[*balancerProc]string{a: "fulcrum-a", b: "fulcrum-b"}
	for _, p := range procs {
		waitCluster(ctx, t, hc, p.admin, "shared led by "+leaderName[lead], func(c protocol.Cluster) bool {
			return c.Leaders["shared"] == leaderName[lead]
		})
	}

	// A report at the other instance is sent to the leader's admin URL
	// (from the instance directory), which answers with its term.
	var reg struct {
		ID, Token string
	}
	mustCall(ctx, t, hc, http.MethodPost, other.admin+"/v1/groups/shared/replicas", map[string]any{"address": "http://127.0.0.1:9"}, http.StatusCreated, &reg)
	noRedirects := *hc
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	status, hdr := reportOnce(ctx, t, &noRedirects, other.admin, reg.Token, nil)
	if status != http.StatusTemporaryRedirect || hdr.Get("Location") != lead.admin+"/v1/report" {
		t.Fatalf("report at the instance that does not lead: %d Location %q, want 307 to %s/v1/report", status, hdr.Get("Location"), lead.admin)
	}
	var adv struct {
		Term uint64 `json:"term"`
	}
	if status, _ := reportOnce(ctx, t, &noRedirects, lead.admin, reg.Token, &adv); status != http.StatusOK || adv.Term == 0 {
		t.Fatalf("report at the leader: %d, term %d; want 200 with the leader's term", status, adv.Term)
	}

	// The leader pushes its loads to the other instance, whose status
	// shows them.
	waitGroup(ctx, t, hc, other.admin, "shared", func(g groupStatus) error {
		reportOnce(ctx, t, &noRedirects, lead.admin, reg.Token, nil) // keep it fresh
		if r, ok := g.replica(reg.ID); !ok || r.Load == nil || *r.Load != 1 {
			return fmt.Errorf("replica %s at the instance that does not lead: %+v, want the load 1 reported at the leader", reg.ID, r)
		}
		return nil
	})

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

// reportOnce POSTs a report with token to admin's /v1/report through hc,
// decoding a 200's advisory into adv when not nil.
func reportOnce(ctx context.Context, t *testing.T, hc *http.Client, admin, token string, adv any) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, admin+"/v1/report", strings.NewReader(`{"load": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if adv != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(adv); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, resp.Header
}
