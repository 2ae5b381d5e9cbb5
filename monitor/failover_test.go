package monitor_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// reportTap records the Authorization of every /v1/report that reaches
// the real balancer.
type reportTap struct {
	mu    sync.Mutex
	auths []string
}

func (tp *reportTap) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/report" {
			tp.mu.Lock()
			tp.auths = append(tp.auths, r.Header.Get("Authorization"))
			tp.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (tp *reportTap) reports() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]string(nil), tp.auths...)
}

// nonLeader is a real HTTP server standing in for a cluster instance that
// is not the group's leader, until cluster mode lands (two single-node
// balancers cannot share a group's state yet): it answers every
// /v1/report with 307 to redirectTo's /v1/report, as a non-leader will, and
// passes every other request (registration, deregistration) on to the
// balancer at proxyTo. It counts the reports it redirected. An empty
// redirectTo redirects to itself.
func nonLeader(t *testing.T, proxyTo, redirectTo string) (string, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(proxyTo)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	redirected := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/report" {
			redirected.Add(1)
			http.Redirect(w, r, redirectTo+"/v1/report", http.StatusTemporaryRedirect) // "" + path: itself
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, redirected
}

// closedURL returns the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestReportFollowsA307WithItsToken: a report answered 307 is sent again,
// with the replica's token, to the Location (a real balancer); the
// balancer answers it, and the following reports go straight there.
func TestReportFollowsA307WithItsToken(t *testing.T) {
	t.Parallel()
	var tap reportTap
	leader, _ := realBalancer(t, tap.wrap)
	other, redirected := nonLeader(t, leader, leader)
	rp := newReplica(t, nil, func(o *monitor.Options) {
		o.Admin, o.Admins, o.JoinToken = other, []string{leader}, "join"
	})
	reg := rp.start(t)

	for range 3 {
		adv := rp.reportNow(t, time.Second)
		if adv.Advisory != protocol.Nominal {
			t.Fatalf("advisory %+v, want the leader's nominal", adv)
		}
	}
	if n := redirected.Load(); n != 1 {
		t.Fatalf("the non-leader got %d reports, want 1: the monitor keeps reporting to the leader it was sent to", n)
	}
	want := "Bearer " + reg.Token
	got := tap.reports()
	if len(got) != 3 {
		t.Fatalf("the leader got %d reports, want 3", len(got))
	}
	for i, a := range got {
		if a != want {
			t.Fatalf("report %d reached the leader with Authorization %q, want %q", i, a, want)
		}
	}
}

// TestReportTriesTheListWhenTheRedirectTargetFails: when the instance a
// 307 points to cannot be reached, the monitor goes on with its list.
func TestReportTriesTheListWhenTheRedirectTargetFails(t *testing.T) {
	t.Parallel()
	var tap reportTap
	bal, _ := realBalancer(t, tap.wrap)
	other, redirected := nonLeader(t, bal, closedURL(t))
	rp := newReplica(t, nil, func(o *monitor.Options) {
		o.Admins, o.JoinToken = []string{other, bal}, "join"
	})
	rp.start(t)
	rp.reportNow(t, time.Second)
	rp.reportNow(t, time.Second)
	if n := redirected.Load(); n != 1 {
		t.Fatalf("the redirecting instance got %d reports, want 1", n)
	}
	if n := len(tap.reports()); n != 2 {
		t.Fatalf("the balancer got %d reports, want 2", n)
	}
}

// TestFailoverToTheNextAdminURL: the first admin URL is a closed port, the
// second a real balancer: the monitor registers, reports and deregisters
// through the second.
func TestFailoverToTheNextAdminURL(t *testing.T) {
	t.Parallel()
	var tap reportTap
	bal, b := realBalancer(t, tap.wrap)
	rp := newReplica(t, nil, func(o *monitor.Options) {
		o.Admins, o.JoinToken = []string{closedURL(t), bal}, "join"
	})
	reg := rp.start(t)
	if st, err := b.Group(testGroup); err != nil || len(st.Replicas) != 1 || st.Replicas[0].ID != reg.ID || st.Replicas[0].State != protocol.StateActive {
		t.Fatalf("group after registering: %+v, %v; want the replica active", st.Replicas, err)
	}
	rp.reportNow(t, time.Second)
	if n := len(tap.reports()); n != 1 {
		t.Fatalf("the balancer got %d reports, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rp.mon.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The balancer drains a removed replica and drops it once idle.
	if st, _ := b.Group(testGroup); len(st.Replicas) != 0 && st.Replicas[0].State != protocol.StateDraining {
		t.Fatalf("replicas after Close: %+v, want it draining or gone", st.Replicas)
	}
}

// TestFailoverWhenTheBalancerDies: the monitor reports to a real balancer;
// that balancer's admin API goes away (its listener closed, as when the
// process is killed); the next report goes to the second real balancer,
// which does not know the token (they share no state yet), so the monitor
// registers there and the report is taken.
func TestFailoverWhenTheBalancerDies(t *testing.T) {
	t.Parallel()
	var tapA, tapB reportTap
	// The first balancer's API is served by first, whose listener the
	// test closes.
	first := httptest.NewUnstartedServer(nil)
	realBalancer(t, func(h http.Handler) http.Handler {
		first.Config.Handler = tapA.wrap(h)
		return http.NotFoundHandler()
	})
	first.Start()
	t.Cleanup(first.Close)
	second, b := realBalancer(t, tapB.wrap)
	rp := newReplica(t, nil, func(o *monitor.Options) {
		o.Admins, o.JoinToken = []string{first.URL, second}, "join"
	})
	rp.start(t)
	rp.reportNow(t, time.Second)
	if na, nb := len(tapA.reports()), len(tapB.reports()); na != 1 || nb != 0 {
		t.Fatalf("reports at the first and second balancers: %d and %d, want 1 and 0", na, nb)
	}
	first.CloseClientConnections()
	first.Close()

	rp.reportNow(t, time.Second)
	rp.reportNow(t, time.Second)
	if na, nb := len(tapA.reports()), len(tapB.reports()); na != 1 || nb < 2 {
		t.Fatalf("after the first died, reports at the first and second: %d and %d, want 1 and at least 2", na, nb)
	}
	reg, _ := rp.mon.Registered()
	if st, err := b.Group(testGroup); err != nil || len(st.Replicas) != 1 || st.Replicas[0].ID != reg.ID {
		t.Fatalf("the second balancer's group: %+v, %v; want the replica registered again", st.Replicas, err)
	}
}

// TestRedirectLoopIsBounded: an instance that redirects a report to itself
// gets it at most 1 + 3 times; then the monitor tries the next admin URL.
func TestRedirectLoopIsBounded(t *testing.T) {
	t.Parallel()
	var tap reportTap
	bal, _ := realBalancer(t, tap.wrap)
	loop, redirected := nonLeader(t, bal, "")
	rp := newReplica(t, nil, func(o *monitor.Options) {
		o.Admins, o.JoinToken = []string{loop, bal}, "join"
	})
	rp.start(t)
	rp.reportNow(t, time.Second)
	if n := redirected.Load(); n != 4 {
		t.Fatalf("the looping instance got %d reports, want 4 (the report and 3 redirects)", n)
	}
	if n := len(tap.reports()); n != 1 {
		t.Fatalf("the balancer got %d reports, want 1", n)
	}
}
