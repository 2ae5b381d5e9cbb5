//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// singleConfig is a single node's config file: a declared group with a
// join token.
const singleConfig = `
admin: 127.0.0.1:0
data_dir: %s
groups:
  - name: declared
    front_door: 127.0.0.1:0
    binding: per-request
    join_token: declared-join
`

// clusterStore is what the single node's config file gains for cluster
// mode, and migrate reads.
const clusterStore = `store:
  etcd:
    endpoints: [%s]
    prefix: %s
    dial_timeout: 5s
`

// TestMigrateIntoEtcd: a real fulcrum serve on bbolt gets groups (declared
// and made through the API), replicas (one a real backend registered with
// a join token, one through the API), a block; migrate refuses while serve
// holds the data dir, quickly; serve stops; --dry-run writes nothing into a
// real etcd; migrate copies, and the records read back from etcd through
// groupstore equal the bbolt's (all kinds, token hashes, no plain token);
// fulcrum serve with the same config file, now on etcd, shows the same
// groups, replicas and blocks; a second migrate refuses the prefix that
// now holds data; --force
// restores the keys the data dir holds and keeps etcd's others.
func TestMigrateIntoEtcd(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.New(t, etcdtest.Options{})
	ctx := testContext(t, 120*time.Second)
	hc := apiClient(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	const prefix = "/fulcrum-migrate/"
	single := fmt.Sprintf(singleConfig, dataDir)
	singleCfg := writeConfig(t, "%s", single)
	cfg := writeConfig(t, "%s", single+fmt.Sprintf(clusterStore, etcd.Endpoints()[0], prefix))
	eopts := etcdstore.Options{Endpoints: etcd.Endpoints(), Prefix: prefix}

	bal := startServe(t, "--config", singleCfg)
	admin := bal.admin
	mustCall(ctx, t, hc, http.MethodPut, admin+"/v1/groups/made", map[string]any{
		"front_door": freeAddr(t), "binding": "on-demand", "strategy": "least-loaded",
		"report_interval": "200ms", "join_token": "made-join",
	}, http.StatusCreated, nil)
	startPrime(t, "--listen", "127.0.0.1:0", "--register", admin, "--group", "made", "--join-token", "made-join")
	waitReported(ctx, t, hc, admin, "made", 1)
	_, plainURL := startPrime(t, "--listen", "127.0.0.1:0")
	var reg protocol.Registered
	mustCall(ctx, t, hc, http.MethodPost, admin+"/v1/groups/declared/replicas", map[string]any{"address": plainURL}, http.StatusCreated, &reg)
	if reg.Token == "" {
		t.Fatal("registration answered no token")
	}
	mustCall(ctx, t, hc, http.MethodPost, admin+"/v1/groups/made/blocks", map[string]any{"address": "http://127.0.0.1:9"}, http.StatusCreated, nil)

	// serve holds the data dir: migrate says so within bbolt's short
	// open timeout, instead of hanging.
	start := time.Now()
	code, _, stderr := run(ctx, t, "fulcrum migrate (in use)", "migrate", "--config", cfg)
	if code != 2 || !strings.Contains(stderr, "stop fulcrum serve first") {
		t.Fatalf("migrate while serve runs: exit %d, stderr %q; want 2 and \"stop fulcrum serve first\"", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("migrate took %v to see the data dir in use", d)
	}

	// Only serve stops (the backend stays up, as in production: a
	// backend's SIGTERM would deregister it).
	bal.Signal(t, syscall.SIGTERM)
	if code := bal.Exit(ctx, t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	bolt, err := boltstore.Open(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := groupstore.New(bolt).Load()
	bolt.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Groups) != 2 || len(want.Replicas) != 2 || len(want.Blocks) != 1 {
		t.Fatalf("bbolt holds %d groups, %d replicas, %d blocks; want 2, 2, 1", len(want.Groups), len(want.Replicas), len(want.Blocks))
	}

	// --dry-run: the counts per kind, and nothing written (not even the
	// schema version).
	code, stdout, stderr := run(ctx, t, "fulcrum migrate --dry-run", "migrate", "--config", cfg, "--dry-run")
	if code != 0 || !strings.Contains(stdout, "dry run: nothing written") {
		t.Fatalf("migrate --dry-run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkCounts(t, stdout, map[string]string{"groups": "2 2 0 0", "replicas": "2 2 0 0", "blocks": "1 1 0 0", "total": "5 5 0 0"})
	if c, err := etcdstore.Inspect(ctx, eopts); err != nil || !c.Empty() || c.Schema != 0 {
		t.Fatalf("after --dry-run etcd holds %+v (%v); want nothing", c, err)
	}

	code, stdout, stderr = run(ctx, t, "fulcrum migrate", "migrate", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "copied 5 keys in 1 transactions") || !strings.Contains(stdout, "verified: read back 5 keys from etcd") {
		t.Fatalf("migrate: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkCounts(t, stdout, map[string]string{"groups": "2 2 0 0", "replicas": "2 2 0 0", "blocks": "1 1 0 0", "total": "5 5 0 0"})

	est, err := etcdstore.Open(ctx, eopts)
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()
	got, err := groupstore.New(est).Load()
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, want)
	raw, err := est.Client().Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range raw.Kvs {
		if strings.Contains(string(kv.Value), reg.Token) {
			t.Errorf("etcd key %s holds the replica's token in plain text", kv.Key)
		}
	}
	var hashed int
	for _, r := range got.Replicas {
		if r.TokenHash != "" {
			hashed++
		}
	}
	if hashed != 2 {
		t.Errorf("%d of 2 replicas in etcd have a token hash", hashed)
	}

	// fulcrum serve with the same config file, on etcd now, shows what
	// the single node had.
	checkServeOnEtcd(ctx, t, hc, cfg, etcd.Endpoints()[0], want)

	// Again: the prefix holds data now.
	code, _, stderr = run(ctx, t, "fulcrum migrate (again)", "migrate", "--config", cfg)
	if code != 2 || !strings.Contains(stderr, "already holds fulcrum data (2 groups, 2 replicas, 1 blocks)") || !strings.Contains(stderr, "--force") {
		t.Fatalf("second migrate: exit %d, stderr %q; want 2 and a refusal naming what etcd holds", code, stderr)
	}

	// --force: a key the data dir holds, changed in etcd, is restored; a
	// group only etcd holds stays.
	recs := groupstore.New(est)
	changed := want.Groups[0]
	changed.Strategy = "random"
	if err := recs.PutGroup(changed); err != nil {
		t.Fatal(err)
	}
	extra := protocol.Group{Name: "cluster-only", Protocol: protocol.ProtocolHTTP, FrontDoor: "127.0.0.1:0"}
	if err := recs.PutGroup(extra); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(ctx, t, "fulcrum migrate --force", "migrate", "--config", cfg, "--force")
	if code != 0 || !strings.Contains(stdout, "kept: 1 keys in etcd") || !strings.Contains(stdout, "verified: read back 5 keys") {
		t.Fatalf("migrate --force: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkCounts(t, stdout, map[string]string{"groups": "2 0 1 1", "total": "5 0 1 4"})
	after, err := recs.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recs.GetGroup("cluster-only"); err != nil {
		t.Errorf("--force deleted the group only etcd held: %v", err)
	}
	after.Groups = slices.DeleteFunc(after.Groups, func(g protocol.Group) bool { return g.Name == "cluster-only" })
	sameRecords(t, after, want)

	// Bad config files exit 2 naming the key.
	for _, tc := range []struct{ name, config, want string }{
		{"endpoint", "data_dir: " + dataDir + "\nstore: {etcd: {endpoints: [localhost:2379]}}\n", `store.etcd.endpoints[0]: invalid value "localhost:2379"`},
		{"no store.etcd", "data_dir: " + dataDir + "\n", "store.etcd: missing"},
		{"no data", "data_dir: " + filepath.Join(t.TempDir(), "none") + "\nstore: {etcd: {endpoints: [" + etcd.Endpoints()[0] + "]}}\n", "no fulcrum store there"},
	} {
		code, _, stderr := run(ctx, t, "fulcrum migrate ("+tc.name+")", "migrate", "--config", writeConfig(t, "%s", tc.config))
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("migrate with %s: exit %d, stderr %q; want 2 and %q", tc.name, code, stderr, tc.want)
		}
	}
}

// checkCounts checks lines "kind keys new overwritten unchanged" of
// migrate's table.
func checkCounts(t *testing.T, out string, want map[string]string) {
	t.Helper()
	for kind, counts := range want {
		re := regexp.MustCompile(`(?m)^` + kind + `\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$`)
		m := re.FindStringSubmatch(out)
		if m == nil || strings.Join(m[1:], " ") != counts {
			t.Errorf("migrate's %s line = %q, want counts %s in:\n%s", kind, m, counts, out)
		}
	}
}

// sameRecords compares two snapshots' records (their revisions are each
// store's own).
func sameRecords(t *testing.T, got, want groupstore.Snapshot) {
	t.Helper()
	if !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Errorf("groups in etcd:\n%+v\nwant (bbolt):\n%+v", got.Groups, want.Groups)
	}
	if !reflect.DeepEqual(got.Replicas, want.Replicas) {
		t.Errorf("replicas in etcd:\n%+v\nwant (bbolt):\n%+v", got.Replicas, want.Replicas)
	}
	if !reflect.DeepEqual(got.Blocks, want.Blocks) {
		t.Errorf("blocks in etcd:\n%+v\nwant (bbolt):\n%+v", got.Blocks, want.Blocks)
	}
}
