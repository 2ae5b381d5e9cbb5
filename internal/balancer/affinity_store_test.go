package balancer_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestClusterAffinitySharedEntries: in a cluster, a client-activated
// object created through one instance (201 Location) is routed to its
// replica through the other, which has never seen it (round-robin would
// rotate its calls over three replicas): the entry is in etcd, under the
// group's prefix on a lease of the rule's timeout, and goes with the
// group.
func TestClusterAffinitySharedEntries(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	a, b := c.start("fulcrum-a"), c.start("fulcrum-b")
	gs := affinityGroup(clusterGroup, protocol.AffinityRule{Kind: protocol.AffinityClientActivated, Match: "/objects/{id}", Timeout: protocol.Duration(90 * time.Second)})
	gs.FrontDoor = "127.0.0.1:0"
	if _, _, err := a.b.PutGroup(gs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"x", "y", "z"} {
		reg, _, err := a.b.Register(clusterGroup, protocol.Registration{Address: objectReplica(t, name).URL})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.ID)
	}
	front := map[string]string{}
	for _, n := range []*clusterNode{a, b} {
		until(t, 10*time.Second, "three replicas active on "+n.name, func() bool {
			for _, id := range ids {
				if nodeReplicaState(t, n, id) != protocol.StateActive {
					return false
				}
			}
			return true
		})
		st, err := n.b.Group(clusterGroup)
		if err != nil {
			t.Fatal(err)
		}
		front[n.name] = st.Advertise
	}
	cl := httpClient(t)
	created := do(t, cl, http.MethodPost, front[a.name]+"/objects/")
	loc, owner := created.header.Get("Location"), created.body
	if created.status != http.StatusCreated || !strings.HasPrefix(loc, "/objects/") {
		t.Fatalf("POST through %s: %d, Location %q", a.name, created.status, loc)
	}
	for i := range 6 {
		if got := do(t, cl, http.MethodGet, front[b.name]+loc); got.status != http.StatusOK || got.body != owner {
			t.Fatalf("call %d for %s through %s answered %d by %s, created on %s", i, loc, b.name, got.status, got.body, owner)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := a.st.Key(groupstore.AffinityKey(clusterGroup, 0, strings.TrimPrefix(loc, "/objects/")))
	resp, err := a.st.Client().Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("entry %s in etcd: %v, %v; want one key on a lease", key, resp, err)
	}
	ttl, err := a.st.Client().TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil || ttl.GrantedTTL != 90 {
		t.Errorf("the entry's lease: granted %d s (%v), want the rule's 90 s", ttl.GrantedTTL, err)
	}
	if err := a.b.DeleteGroup(clusterGroup); err != nil {
		t.Fatal(err)
	}
	if resp, err := a.st.Client().Get(ctx, key); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("entry %s after the group was deleted: %v, %v; want none", key, resp, err)
	}
}
