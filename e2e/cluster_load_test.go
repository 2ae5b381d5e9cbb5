//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
)

// clusterLoad is Go clients of the client library calling GET /prime/{n}
// of one group, each given the group's front doors on every instance
// (Options.FrontDoors). Client i lists instance i mod n's front door
// first, so that the calls spread over the instances. The clients count
// their calls in flight at each front door (inflightWatch), so that a
// test can tell how many calls were in flight at an instance it kills.
type clusterLoad struct {
	clients []*clusterClient
	watch   *inflightWatch
	start   time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	served map[string]int // successful calls by served_by
}

// clusterClient is one client of a clusterLoad.
type clusterClient struct {
	hc    *http.Client
	tr    *client.Transport
	base  *http.Transport
	front string // the URL it calls: its first front door
	ok    atomic.Int64

	mu   sync.Mutex
	errs []string // failed calls, with when they failed
}

// startClusterLoad starts n clients of the front doors doors, each
// calling every interval (0: as fast as it can, one call at a time) until
// stopped, at the latest when the test ends.
func startClusterLoad(t *testing.T, doors []string, n int, interval time.Duration) *clusterLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &clusterLoad{watch: newInflightWatch(), start: time.Now(), cancel: cancel, served: map[string]int{}}
	for i := range n {
		order := append(append([]string(nil), doors[i%len(doors):]...), doors[:i%len(doors)]...)
		base := &http.Transport{}
		tr := client.NewTransport(client.Options{
			Base: countingTransport{base: base, watch: l.watch}, ClientID: fmt.Sprintf("e2e-cluster-client-%d", i),
			FrontDoors: order, Timeout: 10 * time.Second,
		})
		c := &clusterClient{hc: &http.Client{Transport: tr}, tr: tr, base: base, front: order[0]}
		l.clients = append(l.clients, c)
		l.wg.Add(1)
		go l.run(ctx, c, interval)
	}
	t.Cleanup(l.stop)
	return l
}

func (l *clusterLoad) run(ctx context.Context, c *clusterClient, interval time.Duration) {
	defer l.wg.Done()
	defer c.base.CloseIdleConnections()
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for n := 1_000_003; ; n += 2 {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		} else if ctx.Err() != nil {
			return
		}
		by, err := c.call(ctx, n)
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

// call makes one call, checks its answer and returns who served it.
func (c *clusterClient) call(ctx context.Context, n int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/prime/%d", c.front, n), nil)
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

// servedBy is a copy of the successful calls by the replica that served
// them.
func (l *clusterLoad) servedBy() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.served))
	for k, v := range l.served {
		out[k] = v
	}
	return out
}

func (l *clusterLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// failures are every client's failed calls.
func (l *clusterLoad) failures() []string {
	var out []string
	for i, c := range l.clients {
		c.mu.Lock()
		for _, e := range c.errs {
			out = append(out, fmt.Sprintf("client %d at %s", i, e))
		}
		c.mu.Unlock()
	}
	return out
}

// oks are every client's successful calls so far.
func (l *clusterLoad) oks() []int64 {
	out := make([]int64, len(l.clients))
	for i, c := range l.clients {
		out[i] = c.ok.Load()
	}
	return out
}

// servedSince holds when every client has had at least n successful
// calls since it had before (from oks).
func (l *clusterLoad) servedSince(before []int64, n int64) (bool, string) {
	done := true
	now := l.oks()
	for i := range now {
		done = done && now[i]-before[i] >= n
	}
	return done, fmt.Sprintf("successful calls per client %v (before %v); failures %v", now, before, l.failures())
}

// inflightWatch counts the calls in flight at each front door (host:port)
// and, while a door is watched, every call that was or became in flight
// there: the calls a kill of that door's instance can fail.
type inflightWatch struct {
	mu       sync.Mutex
	inflight map[string]int
	watched  string
	marked   int
}

func newInflightWatch() *inflightWatch { return &inflightWatch{inflight: map[string]int{}} }

func (w *inflightWatch) begin(host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight[host]++
	if host == w.watched {
		w.marked++
	}
}

func (w *inflightWatch) end(host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight[host]--
}

// watchDoor starts counting the calls in flight at host: those in flight
// now and those that start until unwatch.
func (w *inflightWatch) watchDoor(host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched, w.marked = host, w.inflight[host]
}

// unwatch stops watching and returns how many calls were in flight at the
// watched door meanwhile.
func (w *inflightWatch) unwatch() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched = ""
	return w.marked
}

// countingTransport is the clients' base transport: it notes each
// request in flight at its host until its answer's body is closed or the
// request fails.
type countingTransport struct {
	base  http.RoundTripper
	watch *inflightWatch
}

func (ct countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Host
	ct.watch.begin(host)
	resp, err := ct.base.RoundTrip(req)
	if err != nil {
		ct.watch.end(host)
		return nil, err
	}
	resp.Body = &endBody{ReadCloser: resp.Body, end: func() { ct.watch.end(host) }}
	return resp, nil
}

// CloseIdleConnections closes the base transport's idle connections.
func (ct countingTransport) CloseIdleConnections() {
	if c, ok := ct.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// endBody calls end once, when closed.
type endBody struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (b *endBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.end)
	return err
}
