package balancer_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestAdaptiveLoopBalances runs the TAO paper's experiment in-process: 4
// replicas behind the real monitor middleware (push, every 100ms), 8
// clients of the real client library at 100, 100, 100, 100, 50, 50, 50 and
// 50 calls/s, an on-demand least-loaded group. The served rates, counted by
// the replicas' handlers over 1s windows, must come within ±10% of their
// mean (each replica one 100 and one 50 client) for three windows in a
// row, within a bounded time. It runs in a testing/synctest bubble on an
// in-memory network: its 20 s are the bubble's, so a busy machine slows it
// down but cannot make it fail.
func TestAdaptiveLoopBalances(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testAdaptiveLoopBalances)
}

func testAdaptiveLoopBalances(t *testing.T) {
	const (
		replicas = 4
		band     = 0.10
		deadline = 20 * time.Second
	)
	rates := []float64{100, 100, 100, 100, 50, 50, 50, 50}

	n := memnet.New()
	e := newEnv(t, envOptions{net: n, admin: true})
	st := e.mustPutGroup(protocol.Group{
		Name: "prime", Binding: protocol.OnDemand, Strategy: strategy.LeastLoadedName, ReportInterval: ms(100),
	})

	ctx, cancel := context.WithTimeout(context.Background(), deadline+10*time.Second)
	defer cancel()

	served := make([]atomic.Int64, replicas)
	ids := make([]string, replicas)
	for i := range replicas {
		srv := newMemUnstartedReplica(t, n)
		mon, err := monitor.New(monitor.Options{
			Admin: e.adminURL, Group: "prime", Address: srv.URL(),
			HTTPClient: memAdminClient(t, n), Logger: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("replica-%d", i)
		srv.start(mon.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served[i].Add(1)
			io.WriteString(w, name)
		})))
		if err := mon.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeMonitor(t, mon) })
		reg, err := mon.WaitRegistered(ctx)
		if err != nil {
			t.Fatalf("replica %d did not register: %v", i, err)
		}
		ids[i] = reg.ID
	}
	eventually(t, 10*time.Second, func() error {
		for _, r := range e.mustGroup("prime").Replicas {
			if r.Load == nil {
				return fmt.Errorf("replica %s has not reported", r.ID)
			}
		}
		return nil
	})

	var failed atomic.Int64
	var firstErr atomic.Value
	clientsCtx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopClients()
		wg.Wait()
	}()
	for _, rate := range rates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runClient(clientsCtx, n, st.Advertise+"/work", rate, func(err error) {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			})
		}()
	}

	// Sample the served rates every second until three windows in a row
	// are balanced.
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	timeout := time.NewTimer(deadline)
	defer timeout.Stop()
	prev := make([]int64, replicas)
	var history []string
	balancedRun := 0
	for balancedRun < 3 {
		select {
		case <-timeout.C:
			t.Fatalf("not balanced within ±%.0f%% for three windows in a row in %s; per-second served rates (%s):\n%s",
				band*100, deadline, strings.Join(ids, " "), strings.Join(history, "\n"))
		case <-tick.C:
		}
		window := make([]float64, replicas)
		for i := range replicas {
			n := served[i].Load()
			window[i] = float64(n - prev[i])
			prev[i] = n
		}
		ok := withinBand(window, band)
		history = append(history, fmt.Sprintf("%5.1fs %v balanced=%v", time.Since(start).Seconds(), window, ok))
		if ok {
			balancedRun++
		} else {
			balancedRun = 0
		}
	}
	var rebinds uint64
	for _, r := range e.mustGroup("prime").Replicas {
		rebinds += r.Counters.Rebinds
		t.Logf("%s: %+v", r.ID, r.Counters)
	}
	t.Logf("balanced after %.1fs, %d rebinds:\n%s", time.Since(start).Seconds(), rebinds, strings.Join(history, "\n"))
	stopClients()
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d calls failed; first: %v", n, firstErr.Load())
	}
}

// withinBand reports whether every rate is within band of their mean.
func withinBand(rates []float64, band float64) bool {
	mean := 0.0
	for _, r := range rates {
		mean += r
	}
	mean /= float64(len(rates))
	if mean == 0 {
		return false
	}
	for _, r := range rates {
		if math.Abs(r-mean) > band*mean {
			return false
		}
	}
	return true
}

// runClient calls url at rate calls/s (open loop: on a fixed grid; a late
// call goes at once without shifting the grid) through the client library
// until ctx ends, over n, telling fail about every failed call.
func runClient(ctx context.Context, n *memnet.Network, url string, rate float64, fail func(error)) {
	base := &http.Transport{Proxy: nil, DialContext: n.Dial, MaxIdleConnsPerHost: 4}
	defer base.CloseIdleConnections()
	hc := &http.Client{Transport: client.NewTransport(client.Options{Base: base, Logger: quiet}), Timeout: 5 * time.Second}
	period := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if err := callOnce(ctx, hc, url); err != nil && ctx.Err() == nil {
			fail(err)
		}
		next = next.Add(period)
		timer.Reset(max(time.Until(next), 0))
	}
}

// callOnce makes one call and reads its answer.
func callOnce(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
