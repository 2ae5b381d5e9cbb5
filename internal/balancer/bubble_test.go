package balancer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/protocol"
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

// TestLoopsTickOnTheClock: with a clock whose tickers move only when the
// test moves it, a group steps (and a pull-mode monitor is polled) only
// then, however much other time passes; each step carries the clock's
// time.
func TestLoopsTickOnTheClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		clk := newFakeClock()
		e := newEnv(t, envOptions{net: n, ticking: clk})
		e.mustPutGroup(protocol.Group{Name: "tick", ReportInterval: ms(20)})
		var polls atomic.Int64
		mon := newMemReplica(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			polls.Add(1)
			io.WriteString(w, `{"load": 1}`)
		}))
		e.mustRegisterWith("tick", protocol.Registration{
			Address: mon, Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: mon + "/report"},
		})
		events := e.subscribe("tick")
		steps := func() (n int, last time.Time) {
			for {
				select {
				case ev := <-events:
					if ev.Type == "step" {
						n++
						last = ev.Time
					}
				default:
					return n, last
				}
			}
		}

		synctest.Wait()
		if got := polls.Load(); got != 1 {
			t.Fatalf("%d polls at registration, want 1 (the first is at once)", got)
		}
		time.Sleep(time.Hour) // the bubble's time, not the balancer's
		synctest.Wait()
		if got, _ := steps(); got != 0 || polls.Load() != 1 {
			t.Fatalf("%d steps and %d polls while the balancer's clock stood still, want none and 1", got, polls.Load())
		}
		at := clk.Advance(20 * time.Millisecond)
		synctest.Wait()
		if got, when := steps(); got != 1 || !when.Equal(at) {
			t.Fatalf("%d steps (last at %s) after one interval, want 1 at %s", got, when, at)
		}
		if got := polls.Load(); got != 2 {
			t.Errorf("%d polls after one interval, want 2", got)
		}
	})
}

// onNetwork moves an unstarted httptest server to a fresh address of n.
func onNetwork(t *testing.T, srv *httptest.Server, n *memnet.Network) {
	t.Helper()
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = ln
}

// memAdminClient is adminClient over n.
func memAdminClient(t *testing.T, n *memnet.Network) *http.Client {
	tr := &http.Transport{Proxy: nil, DialContext: n.Dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}
