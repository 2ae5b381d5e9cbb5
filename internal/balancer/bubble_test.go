package balancer_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/memnet"
)

// Helpers of the tests that run inside a testing/synctest bubble: the
// balancer listens and dials on an in-memory network (memnet), so that
// every goroutine blocks durably and the bubble's clock jumps to the next
// tick, health probe or poll instead of waiting for it.

// newMemReplica serves h on a fresh address of n until the end of the
// test, and returns its base URL.
func newMemReplica(t *testing.T, n *memnet.Network, h http.Handler) string {
	t.Helper()
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// memClient is httpClient over n.
func memClient(t *testing.T, n *memnet.Network) *http.Client {
	tr := &http.Transport{Proxy: nil, DialContext: n.Dial, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
