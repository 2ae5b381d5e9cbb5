package cluster

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A simulated replica follows a 307 from /v1/report with its token, keeps
// reporting where it was sent, and goes back to its own instance when that
// fails — as the monitor library does.
func TestReportFollowsRedirect(t *testing.T) {
	t.Parallel()
	var atLeader, atFollower atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/report" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "bad report", http.StatusUnauthorized)
			return
		}
		atLeader.Add(1)
		json.NewEncoder(w).Encode(protocol.Advisory{Advisory: "nominal", Term: 7})
	}))
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atFollower.Add(1)
		http.Redirect(w, r, leader.URL+"/v1/report", http.StatusTemporaryRedirect)
	}))
	defer follower.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := &simReplica{reg: protocol.Registered{Token: "tok"}, at: &instance{admin: follower.URL}, load: newWalk(rand.New(rand.NewPCG(1, 2)), 0.05)}

	for i := range 3 {
		if err := report(ctx, hc, s); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	if f, l := atFollower.Load(), atLeader.Load(); f != 1 || l != 3 {
		t.Errorf("reports at the follower %d, at the leader %d; want 1 and 3 (the 307 followed once, then kept)", f, l)
	}
	leader.Close()
	if err := report(ctx, hc, s); err == nil {
		t.Fatal("a report to a closed leader succeeded")
	}
	if s.to != follower.URL+"/v1/report" {
		t.Errorf("after a failed report it reports to %s, want its own instance again", s.to)
	}
}
