package balancer_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// agentHealth serves protocol.ReplicationHealthzPath as a replicated
// agent does (200 while ok, 503 otherwise) and counts the probes; every
// other path is 404, as a GIOP agent's listener answers.
func agentHealth(t *testing.T, ok *atomic.Bool, probes *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != protocol.ReplicationHealthzPath {
			http.NotFound(w, r)
			return
		}
		probes.Add(1)
		if !ok.Load() {
			http.Error(w, `{"state":"joining"}`, http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"state":"applying"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A replicated GIOP group's replicas are agents registered by URL: an IOR
// or corbaloc address is refused saying so, the agents are probed at
// their healthz path (not with LocateRequests, which an http:// address
// cannot take), and the group's reference is typed CORBA::Object.
func TestReplicatedGIOPAgents(t *testing.T) {
	t.Parallel()
	logs := newLogOpener(t)
	e := newEnv(t, envOptions{replicatedLog: logs.Open})
	gs := replicatedSpec("counter", protocol.Replicated{})
	gs.Protocol = protocol.ProtocolGIOP
	gs.Health = protocol.Health{Interval: ms(20), Timeout: ms(15), Rise: 1, Fall: 1}
	e.mustPutGroup(gs)
	events := e.subscribe("counter")

	for _, addr := range []string{replicaIOR("127.0.0.1", 9001), "corbaloc:iiop:127.0.0.1:9001/c"} {
		_, _, err := e.b.Register("counter", protocol.Registration{Address: addr})
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != "address" || !strings.Contains(fe.Allowed, "agent") || !strings.Contains(fe.Allowed, "--target") {
			t.Errorf("Register(%.30s…) in a replicated GIOP group: %v, want a FieldError on address naming the agent and its --target", addr, err)
		}
	}

	var okA, okB atomic.Bool
	var probesA, probesB atomic.Int64
	okA.Store(true)
	okB.Store(true)
	a := e.mustRegister("counter", agentHealth(t, &okA, &probesA))
	b := e.mustRegister("counter", agentHealth(t, &okB, &probesB))

	okA.Store(false)
	waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateDown)))
	if got := e.b.LivePeers("counter"); len(got) != 1 || got[0].ID != b.ID {
		t.Errorf("live peers with %s's agent joining: %v, want %s only", a.ID, got, b.ID)
	}
	okA.Store(true)
	waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateActive)))
	if probesA.Load() == 0 || probesB.Load() == 0 {
		t.Errorf("healthz probes: a %d, b %d; want both probed", probesA.Load(), probesB.Load())
	}

	// The agents' applied reports show in the group's status.
	hub, _ := e.b.Hub("counter")
	hub.Applied(b.ID, protocol.AppliedReport{Applied: 7, Checkpoints: true})
	for _, rs := range e.mustGroup("counter").Replicas {
		if want := map[string]uint64{b.ID: 7}[rs.ID]; rs.Applied != want {
			t.Errorf("replica %s: applied %d in the status, want %d", rs.ID, rs.Applied, want)
		}
	}

	ref := e.mustGroup("counter").Reference
	if ref == nil {
		t.Fatal("a replicated GIOP group has no reference")
	}
	parsed, err := ior.Parse(ref.IOR)
	if err != nil {
		t.Fatalf("the group's IOR %q: %v", ref.IOR, err)
	}
	if parsed.TypeID != registry.CORBAObjectTypeID {
		t.Errorf("the group's IOR is typed %q, want %q (its replicas are agents, registered by URL)", parsed.TypeID, registry.CORBAObjectTypeID)
	}
}
