package monitor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// realBalancer runs a real single-node balancer behind the real admin API
// on a loopback socket, with group testGroup (join token "join"; a report
// interval of an hour, so that tests drive every report with ReportNow). wrap, when not
// nil, sits in front of the API handler (to watch what arrives). It
// returns the API's base URL and the balancer.
func realBalancer(t *testing.T, wrap func(http.Handler) http.Handler) (string, *balancer.Balancer) {
	t.Helper()
	return realBalancerEvery(t, wrap, time.Hour)
}

// realBalancerEvery is realBalancer with testGroup's report interval
// (the balancer's step period) set to interval.
func realBalancerEvery(t *testing.T, wrap func(http.Handler) http.Handler, interval time.Duration) (string, *balancer.Balancer) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: discardLogger(), AdminURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	if _, _, err := b.PutGroup(protocol.Group{Name: testGroup, FrontDoor: "127.0.0.1:0", JoinToken: "join",
		ReportInterval: protocol.Duration(interval)}); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = api.New(b, api.Options{AdminToken: "admin", Logger: discardLogger()})
	if wrap != nil {
		h = wrap(h)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, b
}
