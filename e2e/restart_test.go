//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// restartConfig declares one group, declared; the test creates another,
// made, through the API.
const restartConfig = `
admin: 127.0.0.1:0
%s
groups:
  - name: declared
    front_door: 127.0.0.1:0
    binding: per-request
    strategy: round-robin
`

// kill -9 of the balancer and a restart on the same data dir keep what was
// created at run time (a group made through the API, replicas that
// registered), and revert a run-time change to a config-declared group,
// with a warning.
func TestBalancerRestartKeepsConfiguration(t *testing.T) {
	t.Parallel()
	testRestartKeepsConfiguration(t, "data_dir: "+filepath.Join(t.TempDir(), "data"), false)
}

// testRestartKeepsConfiguration is TestBalancerRestartKeepsConfiguration
// with storeKeys (data_dir or store) in the config file. With shared (a
// store on etcd), the run-time change to the declared group is kept
// instead, and the restart warns naming the field.
func testRestartKeepsConfiguration(t *testing.T, storeKeys string, shared bool) {
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)
	cfg := writeConfig(t, restartConfig, storeKeys)

	bal := startServe(t, "--config", cfg)
	admin := bal.admin

	// A group made through the API, with a replica that registers itself
	// (its monitor keeps reporting across the balancer's restart).
	madeDoor := freeAddr(t)
	mustCall(ctx, t, hc, http.MethodPut, admin+"/v1/groups/made", map[string]any{
		"front_door":      madeDoor,
		"binding":         "on-demand",
		"strategy":        "least-loaded",
		"report_interval": "200ms",
	}, http.StatusCreated, nil)
	_, monitoredURL := startPrime(t, "--listen", "127.0.0.1:0", "--register", admin, "--group", "made")
	made := waitReported(ctx, t, hc, admin, "made", 1)
	monitoredID := made.Replicas[0].ID

	// A replica registered at run time in the declared group.
	_, plainURL := startPrime(t, "--listen", "127.0.0.1:0")
	var reg struct {
		ID string `json:"id"`
	}
	mustCall(ctx, t, hc, http.MethodPost, admin+"/v1/groups/declared/replicas", map[string]any{"address": plainURL}, http.StatusCreated, &reg)

	// Run-time changes: to the made group (kept), to the declared one
	// (reverted at restart, and the answer warns so).
	mustCall(ctx, t, hc, http.MethodPatch, admin+"/v1/groups/made", map[string]any{"strategy": "power-of-two"}, http.StatusOK, nil)
	var patched groupStatus
	mustCall(ctx, t, hc, http.MethodPatch, admin+"/v1/groups/declared", map[string]any{"strategy": "random"}, http.StatusOK, &patched)
	if patched.Strategy != "random" || (patched.Warning == "") != shared {
		t.Errorf("PATCH of the declared group answered strategy %q, warning %q; want random and a warning (none on etcd: %v)", patched.Strategy, patched.Warning, shared)
	}

	bal.Kill9(ctx, t)

	// Same data dir, same admin address (so the replica's monitor finds
	// the balancer again).
	bal = startServe(t, "--config", cfg, "--admin", hostPort(admin))
	if bal.admin != admin {
		t.Fatalf("restarted balancer serves on %s, want %s", bal.admin, admin)
	}
	if shared {
		bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`level=WARN msg="group declared in the config file differs from the stored one[^"]*" group=declared fields="?\[[^]]*strategy`))
	} else {
		bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`level=WARN msg="[^"]*revert[^"]*" group=declared`))
	}

	made, err := getGroup(ctx, hc, admin, "made")
	if err != nil {
		t.Fatalf("the group made through the API is gone after the restart: %v", err)
	}
	if made.Strategy != "power-of-two" || made.Binding != "on-demand" || made.Source != "api" {
		t.Errorf("made group after the restart: strategy %q, binding %q, source %q; want power-of-two, on-demand, api", made.Strategy, made.Binding, made.Source)
	}
	if len(made.Replicas) != 1 || made.Replicas[0].ID != monitoredID || made.Replicas[0].Address != monitoredURL {
		t.Errorf("made group's replicas after the restart: %+v, want %s at %s", made.Replicas, monitoredID, monitoredURL)
	}

	declared, err := getGroup(ctx, hc, admin, "declared")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[bool]string{false: "round-robin", true: "random"}[shared]; declared.Strategy != want {
		t.Errorf("declared group's strategy after the restart: %q, want %s (the file's on bbolt, the stored one on etcd)", declared.Strategy, want)
	}
	if r, ok := declared.replica(reg.ID); !ok || r.Address != plainURL {
		t.Errorf("replica %s registered at run time in the declared group is gone after the restart: %+v", reg.ID, declared.Replicas)
	}

	// Both work: the monitored replica reports again under its id, and
	// calls through both front doors reach the replicas.
	waitReported(ctx, t, hc, admin, "made", 1)
	if a := getPrime(ctx, t, hc, "http://"+madeDoor+"/prime/7919"); a.ServedBy != monitoredID {
		t.Errorf("call through the made group's front door served by %q, want %s", a.ServedBy, monitoredID)
	}
	if a := getPrime(ctx, t, hc, declared.Advertise+"/prime/7919"); a.ServedBy != plainURL {
		t.Errorf("call through the declared group's front door served by %q, want %s", a.ServedBy, plainURL)
	}
}

// getPrime calls a prime service URL (following redirects) and decodes the
// answer.
func getPrime(ctx context.Context, t *testing.T, hc *http.Client, url string) primeAnswer {
	t.Helper()
	status, b, err := call(ctx, hc, http.MethodGet, url, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v: %s", url, status, err, b)
	}
	var a primeAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w", url, err))
	}
	return a
}
