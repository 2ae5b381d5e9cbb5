package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// failoverClients is how many clients of each binding the failover phase
// runs.
const failoverClients = 4

// InstanceFailover is the failover phase's result: instance A killed with
// kill -9 while Go clients, given every instance's front door (A's first),
// call a per-request group through the front doors and an on-demand group
// whose clients A had bound to replicas.
type InstanceFailover struct {
	// Clients of each binding.
	Clients int `json:"clients"`
	// FirstSuccessMS is, per per-request client, from the kill to the
	// end of its first successful call through another instance's front
	// door: median and max.
	FirstSuccessP50MS float64 `json:"first_success_p50_ms"`
	FirstSuccessMaxMS float64 `json:"first_success_max_ms"`
	// PerRequestFailed counts the per-request calls that failed (at most
	// those in flight at A at the kill); PerRequestCalls all of them.
	PerRequestFailed int64 `json:"per_request_failed"`
	PerRequestCalls  int64 `json:"per_request_calls"`
	// OnDemandFailed counts the bound on-demand clients' failed calls.
	OnDemandFailed int64 `json:"on_demand_failed"`
	OnDemandCalls  int64 `json:"on_demand_calls"`
	// FirstError is the first failed call's error.
	FirstError string `json:"first_error,omitempty"`
}

// failoverClient is one closed-loop client of the failover phase.
type failoverClient struct {
	hc   *http.Client
	tr   *client.Transport
	base *http.Transport
	url  string

	// answered is the host of the last request that got an answer (the
	// front door or replica a call ended at); the client makes one call
	// at a time.
	answered atomic.Pointer[string]

	mu      sync.Mutex
	oks     []okCall
	failed  int64
	firstEr string
}

// okCall is a successful call: when it ended and the host that answered.
type okCall struct {
	at   time.Time
	host string
}

// hostNoting is a client's base transport: it notes the host of every
// request that gets an answer.
type hostNoting struct {
	base *http.Transport
	c    *failoverClient
}

func (h hostNoting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(req)
	if err == nil {
		host := req.URL.Host
		h.c.answered.Store(&host)
	}
	return resp, err
}

func (c *failoverClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.call(ctx)
		if ctx.Err() != nil {
			return
		}
		end := time.Now()
		c.mu.Lock()
		if err != nil {
			c.failed++
			if c.firstEr == "" {
				c.firstEr = err.Error()
			}
		} else {
			c.oks = append(c.oks, okCall{at: end, host: *c.answered.Load()})
		}
		c.mu.Unlock()
	}
}

func (c *failoverClient) call(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// okAfter is how many calls succeeded after t.
func (c *failoverClient) okAfter(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := slices.BinarySearchFunc(c.oks, t, func(a okCall, t time.Time) int { return a.at.Compare(t) })
	return len(c.oks) - i
}

// firstOKElsewhere is when the first call that succeeded after t through
// a host other than not ended; false when none did.
func (c *failoverClient) firstOKElsewhere(t time.Time, not string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := slices.BinarySearchFunc(c.oks, t, func(a okCall, t time.Time) int { return a.at.Compare(t) })
	for _, ok := range c.oks[i:] {
		if ok.host != not {
			return ok.at, true
		}
	}
	return time.Time{}, false
}

// measureInstanceFailover kills ins[0] (which the experiment does not use
// afterwards).
func measureInstanceFailover(ctx context.Context, env *bench.Env, ins []*instance) (InstanceFailover, error) {
	out := InstanceFailover{Clients: failoverClients}
	perReq, err := createGroup(ctx, ins[1], ins, "failover", map[string]any{"binding": "per-request", "strategy": "round-robin"})
	if err != nil {
		return out, err
	}
	onDemand, err := createGroup(ctx, ins[1], ins, "failover-bound", map[string]any{"binding": "on-demand", "strategy": "round-robin"})
	if err != nil {
		return out, err
	}
	for i := range 2 {
		r, err := env.StartReplica(ctx, fmt.Sprintf("replica-failover-%d", i), nil)
		if err != nil {
			return out, err
		}
		for _, g := range []string{"failover", "failover-bound"} {
			if _, err := register(ctx, ins[1], g, r.URL); err != nil {
				return out, err
			}
		}
	}
	for _, in := range ins {
		for _, g := range []string{"failover", "failover-bound"} {
			if err := waitActive(ctx, in, g, 2); err != nil {
				return out, err
			}
		}
	}
	path := "/prime/" + strconv.Itoa(bench.PrimeN)
	newClient := func(doors []string) *failoverClient {
		c := &failoverClient{base: &http.Transport{MaxIdleConnsPerHost: 4}, url: doors[0] + path}
		c.tr = client.NewTransport(client.Options{Base: hostNoting{base: c.base, c: c}, FrontDoors: doors, Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		c.hc = &http.Client{Transport: c.tr}
		return c
	}
	var reqClients, boundClients []*failoverClient
	for range failoverClients {
		reqClients = append(reqClients, newClient(perReq))
		boundClients = append(boundClients, newClient(onDemand))
	}
	all := append(slices.Clone(reqClients), boundClients...)
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Go(func() { c.run(run) })
	}
	defer func() {
		stop()
		wg.Wait()
		for _, c := range all {
			c.base.CloseIdleConnections()
		}
	}()
	every := func(cs []*failoverClient, after time.Time, n int) bool {
		for _, c := range cs {
			if c.okAfter(after) < n {
				return false
			}
		}
		return true
	}
	wait := func(what string, cond func() bool) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for !cond() {
			if !pause(ctx, 5*time.Millisecond) {
				return fmt.Errorf("cluster: failover: %s: %w", what, ctx.Err())
			}
		}
		return nil
	}
	began := time.Now()
	if err := wait("every client served 20 times", func() bool { return every(all, began, 20) }); err != nil {
		return out, err
	}
	for _, c := range all {
		c.mu.Lock()
		failed := c.failed
		c.mu.Unlock()
		if failed > 0 {
			return out, fmt.Errorf("cluster: failover: calls failed before the kill: %s", c.firstEr)
		}
	}
	killed := time.Now()
	ins[0].proc.Stop(0) // SIGKILL
	env.Logf("failover: killed %s (pid %d) with kill -9", ins[0].name, ins[0].proc.Pid())
	if err := wait("every client served 20 times since the kill", func() bool { return every(all, killed, 20) }); err != nil {
		return out, err
	}
	stop()
	wg.Wait()
	var firsts []float64
	dead := strings.TrimPrefix(perReq[0], "http://")
	for _, c := range reqClients {
		first, ok := c.firstOKElsewhere(killed, dead)
		if !ok {
			return out, fmt.Errorf("cluster: failover: a client had no successful call through another instance than %s", dead)
		}
		firsts = append(firsts, float64(first.Sub(killed))/float64(time.Millisecond))
	}
	out.FirstSuccessP50MS, out.FirstSuccessMaxMS = stats.Median(firsts), slices.Max(firsts)
	for _, c := range all {
		c.mu.Lock()
		calls := int64(len(c.oks)) + c.failed
		if slices.Contains(reqClients, c) {
			out.PerRequestFailed += c.failed
			out.PerRequestCalls += calls
		} else {
			out.OnDemandFailed += c.failed
			out.OnDemandCalls += calls
		}
		if out.FirstError == "" {
			out.FirstError = c.firstEr
		}
		c.mu.Unlock()
	}
	return out, nil
}
