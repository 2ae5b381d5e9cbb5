package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// GET /v1/cluster takes the admin token; it answers what Options.Cluster
// describes, with Options.Leaders' leaders, and the request's context.
func TestCluster(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var sawCtx bool
	e := newEnv(t, api.Options{
		AdminToken: adminToken,
		Cluster: func(ctx context.Context) protocol.Cluster {
			sawCtx = ctx != nil && ctx.Err() == nil
			return protocol.Cluster{
				Mode: protocol.ClusterModeCluster, Instance: "a",
				Instances: []protocol.ClusterInstance{
					{Name: "a", AdminURL: "http://127.0.0.1:7070", FrontDoors: map[string]protocol.FrontDoorBinding{"prime": {Address: "127.0.0.1:8000"}}, Started: started, Version: "v1", Self: true},
					{Name: "b", AdminURL: "http://127.0.0.2:7070", FrontDoors: map[string]protocol.FrontDoorBinding{"prime": {Error: "address in use"}}, Started: started, Version: "v1"},
				},
				Leaders: map[string]string{"ignored": "x"},
				Etcd:    &protocol.ClusterEtcd{Prefix: "/fulcrum/", Endpoints: []protocol.EtcdEndpoint{{Endpoint: "http://127.0.0.1:2379", Reachable: true, Leader: true, Version: "3.4.23", DBSize: 20480}}},
			}
		},
		Leaders: func() map[string]string { return map[string]string{"prime": "b"} },
	}, balancer.Options{})

	wantError(t, e.call(http.MethodGet, "/v1/cluster", "", nil), http.StatusUnauthorized, "unauthorized", "")
	a := e.call(http.MethodGet, "/v1/cluster", adminToken, nil)
	want(t, a, http.StatusOK)
	var c protocol.Cluster
	a.decode(t, &c)
	if !sawCtx {
		t.Error("Options.Cluster not called with the request's live context")
	}
	if c.Mode != "cluster" || c.Instance != "a" || len(c.Instances) != 2 || !c.Instances[0].Self || c.Instances[1].FrontDoors["prime"].Error != "address in use" {
		t.Errorf("GET /v1/cluster = %+v", c)
	}
	if len(c.Leaders) != 1 || c.Leaders["prime"] != "b" {
		t.Errorf("leaders = %v, want Options.Leaders' {prime: b} only", c.Leaders)
	}
	if c.Etcd == nil || len(c.Etcd.Endpoints) != 1 || !c.Etcd.Endpoints[0].Leader || c.Etcd.Endpoints[0].DBSize != 20480 {
		t.Errorf("etcd = %+v", c.Etcd)
	}
}

// Without Options.Cluster and Options.Leaders: a single node, and empty
// lists and objects rather than nulls.
func TestClusterUnset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	a := e.call(http.MethodGet, "/v1/cluster", "", nil)
	want(t, a, http.StatusOK)
	if got, want := string(a.body), `{"mode":"single","instance":"","instances":[],"leaders":{}}`; got != want+"\n" && got != want {
		t.Errorf("GET /v1/cluster = %s, want %s", got, want)
	}
}
