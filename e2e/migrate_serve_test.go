//go:build linux

package e2e

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
)

// checkServeOnEtcd starts fulcrum serve with cfg (store.etcd set, naming
// endpoint) and checks that it serves from etcd and shows the groups of
// want, with their binding, strategy, replicas (ids and addresses) and
// blocks, then stops it.
func checkServeOnEtcd(ctx context.Context, t *testing.T, hc *http.Client, cfg, endpoint string, want groupstore.Snapshot) {
	t.Helper()
	bal := startServe(t, "--config", cfg)
	if line := bal.Stderr.String(); !strings.Contains(line, `msg="fulcrum serving"`) || !strings.Contains(line, "etcd="+endpoint) {
		t.Fatalf("serve with store.etcd does not say it serves from etcd at %s:\n%s", endpoint, line)
	}
	for _, g := range want.Groups {
		got, err := getGroup(ctx, hc, bal.admin, g.Name)
		if err != nil {
			t.Errorf("serve on etcd after migrate: %v", err)
			continue
		}
		if got.Binding != string(g.Binding) || got.Strategy != g.Strategy {
			t.Errorf("serve on etcd: group %s is %s/%s, was %s/%s on bbolt", g.Name, got.Binding, got.Strategy, g.Binding, g.Strategy)
		}
		wantReps, gotReps := map[string]string{}, map[string]string{}
		for _, r := range want.Replicas {
			if r.Group == g.Name {
				wantReps[r.ID] = r.Address
			}
		}
		for _, r := range got.Replicas {
			gotReps[r.ID] = r.Address
		}
		if !maps.Equal(gotReps, wantReps) {
			t.Errorf("serve on etcd: group %s has replicas %v, had %v on bbolt", g.Name, gotReps, wantReps)
		}
	}
	var list struct {
		Groups []struct {
			Name    string   `json:"name"`
			Blocked []string `json:"blocked"`
		} `json:"groups"`
	}
	mustCall(ctx, t, hc, http.MethodGet, bal.admin+"/v1/groups", nil, http.StatusOK, &list)
	if len(list.Groups) != len(want.Groups) {
		t.Errorf("serve on etcd lists %d groups, bbolt held %d", len(list.Groups), len(want.Groups))
	}
	wantBlocked, gotBlocked := map[string]string{}, map[string]string{}
	for _, b := range want.Blocks {
		wantBlocked[b.Group+" "+b.Address] = b.Group
	}
	for _, g := range list.Groups {
		for _, a := range g.Blocked {
			gotBlocked[g.Name+" "+a] = g.Name
		}
	}
	if !maps.Equal(gotBlocked, wantBlocked) {
		t.Errorf("serve on etcd: blocked %v, bbolt held %v", gotBlocked, wantBlocked)
	}
	bal.Signal(t, syscall.SIGTERM)
	if code := bal.Exit(ctx, t); code != 0 {
		t.Errorf("serve on etcd exited %d", code)
	}
}
