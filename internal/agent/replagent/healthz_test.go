package replagent_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// healthOf GETs the agent's healthz path and decodes its answer.
func healthOf(t *testing.T, base string) (int, replagent.Health) {
	t.Helper()
	resp, body := get(t, base+protocol.ReplicationHealthzPath)
	var h replagent.Health
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("healthz body %q: %v", body, err)
	}
	return resp.StatusCode, h
}

// The agent's healthz answers 503 joining until its first hello, 200
// applying (with the applied position) once joined, 503 stopped after Run
// returned; an agent not yet made answers 503 starting.
func TestAgentHealthz(t *testing.T) {
	t.Parallel()
	r := startReplica(t, "r1", replicaOpts{})
	wait(t, r.src.opened, "the stream")
	if code, h := healthOf(t, r.listen.URL); code != http.StatusServiceUnavailable || h.State != replagent.StateJoining {
		t.Errorf("healthz before the hello: %d %+v, want 503 joining", code, h)
	}
	r.send(t, hello(0), counterEntry(1, ""))
	r.expectReply(t, src, 1, 2)
	// (The position is stored just after the reply is handed on: it is
	// checked once the agent has stopped, below.)
	if code, h := healthOf(t, r.listen.URL); code != http.StatusOK || h.State != replagent.StateApplying {
		t.Errorf("healthz after entry 1: %d %+v, want 200 applying", code, h)
	}
	resp, err := http.Post(r.listen.URL+protocol.ReplicationHealthzPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST healthz: %d, want 405", resp.StatusCode)
	}

	// Stopped: the server stops answering, the agent stops at entry 2.
	r.server.Close()
	r.send(t, counterEntry(2, ""))
	err = wait(t, r.runErr, "the agent to stop")
	if err == nil {
		t.Fatal("Run returned nil after its server stopped answering")
	}
	r.runErr <- err // for stop
	if code, h := healthOf(t, r.listen.URL); code != http.StatusServiceUnavailable || h.State != replagent.StateStopped || h.Applied != 1 {
		t.Errorf("healthz after the agent stopped: %d %+v, want 503 stopped at 1", code, h)
	}

	starting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { replagent.ServeHealth(w, r, nil) }))
	defer starting.Close()
	if code, h := healthOf(t, starting.URL); code != http.StatusServiceUnavailable || h.State != replagent.StateStarting {
		t.Errorf("healthz of no agent yet: %d %+v, want 503 starting", code, h)
	}
}
