//go:build linux

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// A balancer on etcd (store.etcd) behaves as on bbolt across a kill -9
// and a restart: what was created at run time stays. Unlike bbolt, a
// run-time change to a config-declared group is kept (etcd is shared by
// instances: the file only creates absent groups), with a warning naming
// the field. Its data_dir is not used.
func TestBalancerOnEtcdRestartKeepsConfiguration(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.New(t, etcdtest.Options{})
	dataDir := filepath.Join(t.TempDir(), "unused")
	keys := fmt.Sprintf("data_dir: %s\nstore:\n  etcd:\n    endpoints: [%s]\n    prefix: /e2e-restart/\n", dataDir, strings.Join(etcd.Endpoints(), ", "))
	testRestartKeepsConfiguration(t, keys, true)
	if m, _ := filepath.Glob(filepath.Join(dataDir, "*")); len(m) > 0 {
		t.Errorf("a balancer on etcd wrote to data_dir: %v", m)
	}
}

// --etcd replaces the file's endpoints, and the warning names data_dir.
func TestServeEtcdFlag(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{})
	cfg := writeConfig(t, "admin: 127.0.0.1:0\ndata_dir: %s\nstore:\n  etcd:\n    endpoints: ['http://127.0.0.1:1']\n    prefix: /e2e-flag/\n", filepath.Join(t.TempDir(), "data"))
	bal := startServe(t, "--config", cfg, "--etcd", strings.Join(etcd.Endpoints(), ","))
	bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`level=WARN msg="data_dir is not used with store.etcd`))
	hc := apiClient(t)
	mustCall(ctx, t, hc, http.MethodPut, bal.admin+"/v1/groups/flagged", map[string]any{"front_door": "127.0.0.1:0", "binding": "per-request"}, http.StatusCreated, nil)
	if _, err := getGroup(ctx, hc, bal.admin, "flagged"); err != nil {
		t.Fatal(err)
	}
}

// With no reachable etcd, serve retries for dial_timeout, then exits 1
// naming the endpoints it tried; --check validates store.etcd without
// connecting.
func TestServeEtcdUnreachable(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	// A port nobody listens on: taken, then released.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, "admin: 127.0.0.1:0\nstore:\n  etcd:\n    endpoints: ['%s']\n    dial_timeout: 500ms\n", dead)

	check := startProc(t, "fulcrum serve --check", "serve", "--check", "--config", cfg)
	if code := check.Exit(ctx, t); code != 0 {
		t.Fatalf("serve --check on a valid store.etcd exited %d, want 0 (it must not connect)", code)
	}

	start := time.Now()
	p := startProc(t, "fulcrum serve", "serve", "--config", cfg)
	code := p.Exit(ctx, t)
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("serve with etcd unreachable exited %d, want 1", code)
	}
	if out := p.Stderr.String(); !strings.Contains(out, "endpoints tried: "+dead) {
		t.Errorf("stderr does not name the endpoints tried (%s):\n%s", dead, out)
	}
	if took < 500*time.Millisecond {
		t.Errorf("serve gave up after %v, before dial_timeout 500ms", took)
	}

	bad := writeConfig(t, "store:\n  etcd:\n    endpoints: ['127.0.0.1:2379']\n    session_ttl: 1s\n")
	check = startProc(t, "fulcrum serve --check", "serve", "--check", "--config", bad)
	if code := check.Exit(ctx, t); code != 2 {
		t.Fatalf("serve --check on a bad store.etcd exited %d, want 2", code)
	}
	out := check.Stderr.String()
	for _, w := range []string{`:3: store.etcd.endpoints[0]: invalid value "127.0.0.1:2379"`, `:4: store.etcd.session_ttl: invalid value "1s"`} {
		if !strings.Contains(out, w) {
			t.Errorf("serve --check output lacks %q:\n%s", w, out)
		}
	}
}
