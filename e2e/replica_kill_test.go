//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// loadClient is one Go client-library client calling at a steady rate.
type loadClient struct {
	tr   *client.Transport
	base *http.Transport
	hc   *http.Client
	ok   atomic.Int64

	mu   sync.Mutex
	errs []string // failed calls, with when they failed
}

func (c *loadClient) failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

// load is a set of clients calling GET /prime/{n} through a front door.
type load struct {
	front   string
	clients []*loadClient
	start   time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	served map[string]int // successful calls by served_by
}

// startLoad starts n clients, each calling every interval until stopped
// (at the latest when the test ends).
func startLoad(t *testing.T, front string, n int, interval time.Duration) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{front: front, cancel: cancel, served: map[string]int{}, start: time.Now()}
	for i := range n {
		base := &http.Transport{}
		tr := client.NewTransport(client.Options{Base: base, ClientID: fmt.Sprintf("e2e-client-%d", i)})
		c := &loadClient{tr: tr, base: base, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
		l.clients = append(l.clients, c)
		l.wg.Add(1)
		go l.run(ctx, c, interval)
	}
	t.Cleanup(l.stop)
	return l
}

func (l *load) run(ctx context.Context, c *loadClient, interval time.Duration) {
	defer l.wg.Done()
	defer c.base.CloseIdleConnections()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 1_000_003; ; n += 2 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		by, err := l.call(ctx, c, n)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Sprintf("%.3fs: %v", time.Since(l.start).Seconds(), err))
			c.mu.Unlock()
			continue
		}
		c.ok.Add(1)
		l.mu.Lock()
		l.served[by]++
		l.mu.Unlock()
	}
}

func (l *load) call(ctx context.Context, c *loadClient, n int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/prime/%d", l.front, n), nil)
	if err != nil {
		return "", err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var a primeAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return "", fmt.Errorf("status %d, decoding the answer: %w", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK || a.N != uint64(n) || a.ServedBy == "" {
		return "", fmt.Errorf("status %d, answer %+v", resp.StatusCode, a)
	}
	return a.ServedBy, nil
}

func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *load) servedBy(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served[id]
}

func (l *load) servedString() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.served)
}

// boundTo counts the clients currently bound to replica id.
func (l *load) boundTo(id string) int {
	n := 0
	for _, c := range l.clients {
		if b, ok := c.tr.Binding(l.front); ok && b.Replica == id {
			n++
		}
	}
	return n
}

// kill -9 of a replica while Go clients call an on-demand group: no call
// fails but those in flight at the kill, the clients rebind to the
// survivor, and the replica restarted on its address re-registers under the
// same id and takes load again.
func TestReplicaKillRebindsAndRestartTakesLoad(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 90*time.Second)
	hc := apiClient(t)

	bal := startServe(t, "--config", writeConfig(t, onDemandConfig, filepath.Join(t.TempDir(), "data")))
	victim, victimURL := startPrime(t, "--listen", "127.0.0.1:0", "--register", bal.admin, "--group", "prime")
	_, survivorURL := startPrime(t, "--listen", "127.0.0.1:0", "--register", bal.admin, "--group", "prime")
	g := waitReported(ctx, t, hc, bal.admin, "prime", 2)
	v, _ := g.replicaAt(victimURL)
	s, _ := g.replicaAt(survivorURL)
	if v.ID == "" || s.ID == "" {
		t.Fatalf("replicas %s and %s not found in %+v", victimURL, survivorURL, g.Replicas)
	}

	// Four clients at 40 calls/s each. Both replicas get clients (on
	// their first calls or when the analyzer rebalances).
	const clients = 4
	l := startLoad(t, g.Advertise, clients, 25*time.Millisecond)
	proctest.Poll(ctx, t, "both replicas serving bound clients", func() (bool, string) {
		return l.servedBy(v.ID) >= 20 && l.servedBy(s.ID) >= 20 && l.boundTo(v.ID) > 0,
			fmt.Sprintf("served %s, %d clients bound to %s", l.servedString(), l.boundTo(v.ID), v.ID)
	})
	for i, c := range l.clients {
		if f := c.failures(); len(f) > 0 {
			t.Fatalf("client %d failed before any kill: %v", i, f)
		}
	}

	// kill -9 the replica with clients bound to it.
	bound := l.boundTo(v.ID)
	killedAt := time.Since(l.start)
	victim.Kill9(ctx, t)
	t.Logf("killed %s (%s) with %d of %d clients bound to it at %.3fs", v.ID, victimURL, bound, clients, killedAt.Seconds())

	okAtKill := make([]int64, clients)
	for i, c := range l.clients {
		okAtKill[i] = c.ok.Load()
	}
	proctest.Poll(ctx, t, "every client bound to the survivor and served 10 times since the kill", func() (bool, string) {
		done := l.boundTo(s.ID) == clients
		for i, c := range l.clients {
			done = done && c.ok.Load()-okAtKill[i] >= 10
		}
		return done, fmt.Sprintf("%d clients bound to %s; served %s", l.boundTo(s.ID), s.ID, l.servedString())
	})
	checkFailures := func(when string) {
		t.Helper()
		for i, c := range l.clients {
			if f := c.failures(); len(f) > 1 {
				t.Errorf("%s: client %d had %d failed calls, want at most the one in flight at the kill: %v", when, i, len(f), f)
			} else if len(f) == 1 {
				t.Logf("client %d: one failed call (in flight at the kill): %s", i, f[0])
			}
		}
	}
	checkFailures("after the kill")
	if g, err := getGroup(ctx, hc, bal.admin, "prime"); err == nil {
		r, _ := g.replica(v.ID)
		t.Logf("after the kill %s is %s", v.ID, r.State)
	}

	// Start it again on the same address: it re-registers (with replace:
	// the same id), reports, and takes load again.
	_, again := startPrime(t, "--listen", hostPort(victimURL), "--register", bal.admin, "--group", "prime")
	if again != victimURL {
		t.Fatalf("restarted replica listens on %s, want %s", again, victimURL)
	}
	servedBefore := l.servedBy(v.ID)
	proctest.Poll(ctx, t, "the restarted replica active, reporting, under its old id", func() (bool, string) {
		g, err := getGroup(ctx, hc, bal.admin, "prime")
		if err != nil {
			return false, err.Error()
		}
		r, ok := g.replica(v.ID)
		return ok && len(g.Replicas) == 2 && r.State == "active" && r.Load != nil && r.Address == victimURL,
			fmt.Sprintf("%+v", g.Replicas)
	})
	proctest.Poll(ctx, t, "the restarted replica taking load", func() (bool, string) {
		return l.servedBy(v.ID)-servedBefore >= 20 && l.boundTo(v.ID) > 0,
			fmt.Sprintf("served %s; %d clients bound to %s", l.servedString(), l.boundTo(v.ID), v.ID)
	})
	l.stop()
	t.Logf("served in all: %s", l.servedString())
	checkFailures("at the end")
}
