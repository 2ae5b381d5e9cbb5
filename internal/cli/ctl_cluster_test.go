package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestCtlCluster: "ctl cluster" prints the instances (the answering one
// marked), their front doors and bind errors, the leaders and etcd's
// endpoints as tables; -o json and --json the API's answer; another -o is
// a usage error.
func TestCtlCluster(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := balancer.New(balancer.Options{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	started := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	desc := protocol.Cluster{
		Mode: protocol.ClusterModeCluster, Instance: "fulcrum-a",
		Instances: []protocol.ClusterInstance{
			{Name: "fulcrum-a", AdminURL: "http://127.0.0.1:7070", FrontDoors: map[string]protocol.FrontDoorBinding{"prime": {Address: "127.0.0.1:8000"}}, Started: started, Version: "v1.2.3", Self: true},
			{Name: "fulcrum-b", AdminURL: "http://127.0.0.2:7070", FrontDoors: map[string]protocol.FrontDoorBinding{"prime": {Error: "address already in use"}}, Started: started, Version: "v1.2.3"},
		},
		Etcd: &protocol.ClusterEtcd{Prefix: "/fulcrum/", Endpoints: []protocol.EtcdEndpoint{
			{Endpoint: "http://127.0.0.1:2379", Reachable: true, Leader: true, Version: "3.4.23", DBSize: 3 << 20},
			{Endpoint: "http://127.0.0.3:2379", Error: "context deadline exceeded"},
		}},
	}
	srv := httptest.NewServer(api.New(b, api.Options{Logger: log,
		Cluster: func(context.Context) protocol.Cluster { return desc },
		Leaders: func() map[string]string { return map[string]string{"prime": "fulcrum-b"} },
	}))
	t.Cleanup(srv.Close)

	out := mustCtl(t, srv.URL, "cluster")
	for _, re := range []string{
		`cluster of 2 instance\(s\), as fulcrum-a sees it`,
		`(?m)^fulcrum-a \*\s+http://127\.0\.0\.1:7070\s+2026-11-27T09:00:00Z\s+v1\.2\.3\s+prime=127\.0\.0\.1:8000$`,
		`(?m)^fulcrum-b\s+http://127\.0\.0\.2:7070\s+.*prime \(not listening: address already in use\)$`,
		`(?m)^prime\s+fulcrum-b$`,
		`(?m)^http://127\.0\.0\.1:2379\s+yes\s+yes\s+3\.4\.23\s+3\.0 MiB\s+-$`,
		`(?m)^http://127\.0\.0\.3:2379\s+no\s+no\s+-\s+-\s+context deadline exceeded$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("ctl cluster does not match %s:\n%s", re, out)
		}
	}
	for _, args := range [][]string{{"cluster", "-o", "json"}, {"--json", "cluster"}} {
		var got protocol.Cluster
		if err := json.Unmarshal([]byte(mustCtl(t, srv.URL, args...)), &got); err != nil || got.Instance != "fulcrum-a" || len(got.Instances) != 2 || got.Leaders["prime"] != "fulcrum-b" {
			t.Errorf("ctl %s: %+v, %v", strings.Join(args, " "), got, err)
		}
	}
	_, errOut, code := runCtl(t, "", "ctl", "--admin", srv.URL, "cluster", "-o", "yaml")
	if code != 2 || !strings.Contains(errOut, `"yaml"`) || !strings.Contains(errOut, "json") {
		t.Errorf("ctl cluster -o yaml: exit %d, %q; want 2 naming the value and json", code, errOut)
	}
}
