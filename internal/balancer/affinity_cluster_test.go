package balancer_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/affinity"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestClusterAffinityPassiveEjection: in a cluster, "live" for a singleton
// key is the cluster-wide state. One instance passively ejects the key's
// replica: that instance answers 503 affinity_unavailable for the key
// instead of moving it, while the other instance still sends it to its
// replica, and keys on the other replica are served everywhere.
func TestClusterAffinityPassiveEjection(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b")}
	replica := func(name string) *httptest.Server {
		return newReplica(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/boom" && name == "x" {
				w.WriteHeader(http.StatusInternalServerError)
			}
			io.WriteString(w, name)
		}))
	}
	x, y := replica("x"), replica("y")
	_, _, err := nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval),
		Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName,
		Health:   protocol.Health{Passive: protocol.Passive{ConsecutiveFailures: 1, BaseEjection: protocol.Duration(time.Minute), MaxEjectedPercent: 100}},
		Affinity: []protocol.AffinityRule{{Kind: protocol.AffinitySingleton, Match: "/objects/{name}"}}})
	if err != nil {
		t.Fatal(err)
	}
	regX, _, err := nodes[0].b.Register(clusterGroup, protocol.Registration{Address: x.URL})
	if err != nil {
		t.Fatal(err)
	}
	regY, _, err := nodes[0].b.Register(clusterGroup, protocol.Registration{Address: y.URL})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{regX.ID, regY.ID}
	onX, onY := "", ""
	for i := 0; onX == "" || onY == ""; i++ {
		key := fmt.Sprint("k", i)
		if affinity.Pick(clusterGroup, 0, key, ids) == regX.ID {
			onX = cmpOr(onX, key)
		} else {
			onY = cmpOr(onY, key)
		}
	}
	for _, n := range nodes {
		until(t, 10*time.Second, "both replicas active on "+n.name, func() bool {
			gs, err := n.b.Group(clusterGroup) // the other instance learns of the group from etcd
			if err != nil {
				return false
			}
			active := 0
			for _, r := range gs.Replicas {
				if (r.ID == regX.ID || r.ID == regY.ID) && r.State == protocol.StateActive {
					active++
				}
			}
			return active == 2
		})
	}
	front := func(n *clusterNode) string {
		gs, err := n.b.Group(clusterGroup)
		if err != nil {
			t.Fatal(err)
		}
		return gs.Advertise
	}
	cl := httpClient(t)
	ejecting, other := nodes[1], nodes[0]
	// x fails a call through one instance: that instance ejects it.
	until(t, 10*time.Second, "x ejected on "+ejecting.name, func() bool {
		get(t, cl, front(ejecting)+"/boom")
		return nodeReplicaState(t, ejecting, regX.ID) == protocol.StateEjected
	})
	if st := nodeReplicaState(t, other, regX.ID); st != protocol.StateActive {
		t.Fatalf("x is %s on %s, want active: passive ejection is each instance's own", st, other.name)
	}
	a := get(t, cl, front(ejecting)+"/objects/"+onX)
	if a.status != http.StatusServiceUnavailable || errorCode(t, a) != httpdoor.CodeAffinity {
		t.Fatalf("key %s on the ejecting instance: %d %s, want 503 %s (not moved to y)", onX, a.status, a.body, httpdoor.CodeAffinity)
	}
	for range 3 {
		if a := get(t, cl, front(other)+"/objects/"+onX); a.status != http.StatusOK || a.body != "x" {
			t.Fatalf("key %s on %s: %d %s, want x", onX, other.name, a.status, a.body)
		}
		for _, n := range nodes {
			if a := get(t, cl, front(n)+"/objects/"+onY); a.status != http.StatusOK || a.body != "y" {
				t.Fatalf("key %s on %s: %d %s, want y", onY, n.name, a.status, a.body)
			}
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
