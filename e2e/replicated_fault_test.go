//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// Replicated groups end to end under faults: a replica of a replicated
// group is a "fulcrum backend counter" and the "fulcrum agent replicated"
// in front of it; the tests kill processes mid-run and check what seed
// 001 promises — no client-visible error, every call applied once.

// replicatedGroup is the replicated group of these tests.
const replicatedGroup = "counter"

// counterReplica is one replica: a counter and its agent.
type counterReplica struct {
	counter, agent *proctest.Proc
	url            string // the counter's URL
}

// startCounterReplica starts a counter and an agent in front of it that
// registers with group at the admin URLs register (the first is where it
// streams the log from), with env (a join token) added to the agent's
// environment.
func startCounterReplica(t *testing.T, register []string, group string, env []string) *counterReplica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	counter := startProc(t, "fulcrum backend counter", "backend", "counter", "--listen", "127.0.0.1:0")
	url := counter.WaitOutput(ctx, t, counter.Stdout, listeningLine)[1]
	agent := proctest.Start(t, "fulcrum agent replicated", proctest.Options{Env: env}, fulcrumBin,
		"agent", "replicated", "--target", url, "--listen", "127.0.0.1:0", "--register", strings.Join(register, ","),
		"--group", group, "--data-dir", filepath.Join(t.TempDir(), "agent"))
	agent.WaitOutput(ctx, t, agent.Stdout, listeningLine)
	return &counterReplica{counter: counter, agent: agent, url: url}
}

// live reports whether both of the replica's processes run.
func (r *counterReplica) live() bool {
	for _, p := range []*proctest.Proc{r.counter, r.agent} {
		select {
		case <-p.Done():
			return false
		default:
		}
	}
	return true
}

// counterValue reads a counter's value (GET /value).
func counterValue(ctx context.Context, hc *http.Client, url string) (int64, error) {
	status, body, err := call(ctx, hc, http.MethodGet, url+"/value", nil)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("GET %s/value: %d %s", url, status, body)
	}
	var v struct {
		Value int64 `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, fmt.Errorf("GET %s/value: %w", url, err)
	}
	return v.Value, nil
}

// waitCounters waits until every live replica's counter holds want (the
// replicas apply after the first reply, so the last calls may still be
// applying when the clients stop); it fails the test with the values
// when that does not happen before ctx ends.
func waitCounters(ctx context.Context, t *testing.T, hc *http.Client, reps []*counterReplica, want int64) {
	t.Helper()
	proctest.Poll(ctx, t, fmt.Sprintf("every live replica's counter at %d (the calls answered)", want), func() (bool, string) {
		var got []string
		ok, live := true, 0
		for i, r := range reps {
			if !r.live() {
				continue
			}
			live++
			v, err := counterValue(ctx, hc, r.url)
			if err != nil || v != want {
				ok = false
			}
			got = append(got, fmt.Sprintf("replica %d: %d (%v)", i+1, v, err))
		}
		return ok && live > 0, strings.Join(got, "; ")
	})
}

// waitActiveAt waits until group at admin lists n replicas, all active.
func waitActiveAt(ctx context.Context, t *testing.T, hc *http.Client, admin, group string, n int) {
	t.Helper()
	waitGroup(ctx, t, hc, admin, group, func(g groupStatus) error {
		active := 0
		for _, r := range g.Replicas {
			if r.State == "active" {
				active++
			}
		}
		if active != n {
			return fmt.Errorf("%d of %d replicas active at %s, want %d", active, len(g.Replicas), admin, n)
		}
		return nil
	})
}

// increment calls POST /increment through hc and returns the value the
// reply carries.
func increment(ctx context.Context, hc *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/increment", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST %s/increment: %d %s", url, resp.StatusCode, body)
	}
	var v struct {
		Value int64 `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, fmt.Errorf("POST %s/increment: %q: %w", url, body, err)
	}
	return v.Value, nil
}

// killedBySIGKILL waits until p has exited and returns nil when SIGKILL
// ended it, and otherwise how it ended.
func killedBySIGKILL(ctx context.Context, p *proctest.Proc) error {
	select {
	case <-p.Done():
	case <-ctx.Done():
		return fmt.Errorf("%s still running: %w", p.Name, ctx.Err())
	}
	var ee *exec.ExitError
	if !errors.As(p.Err(), &ee) {
		return fmt.Errorf("%s exited with %v, want death by SIGKILL", p.Name, p.Err())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return fmt.Errorf("%s ended with %v, want death by SIGKILL", p.Name, ee)
	}
	return nil
}

// TestReplicatedReplicasKilledUnderLoad kills replicas with kill -9, no
// failpoint: a replicated group of four replicas on one instance, four Go
// clients (Options.Replicated) making their calls concurrently; once a
// quarter of the calls are answered, one replica's counter and another
// replica's agent are killed (SIGKILL). No call fails, every call gets a
// value of its own (none ran twice), and the two live replicas' counters
// both end at the number of calls.
func TestReplicatedReplicasKilledUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 90*time.Second)
	const clients, perClient = 4, 100
	const total = clients * perClient
	cfg := writeConfig(t, "admin: 127.0.0.1:0\ndata_dir: %s\ngroups:\n  - name: %s\n    front_door: 127.0.0.1:0\n    binding: replicated\n",
		filepath.Join(t.TempDir(), "data"), replicatedGroup)
	bal := startServe(t, "--config", cfg)
	hc := apiClient(t)
	var reps []*counterReplica
	for range 4 {
		reps = append(reps, startCounterReplica(t, []string{bal.admin}, replicatedGroup, nil))
	}
	waitActiveAt(ctx, t, hc, bal.admin, replicatedGroup, len(reps))
	g, err := getGroup(ctx, hc, bal.admin, replicatedGroup)
	if err != nil {
		t.Fatal(err)
	}
	door := "http://" + g.Listening

	var answered atomic.Int64
	quarter := make(chan struct{})
	var once sync.Once
	values := make([][]int64, clients)
	errs := make([][]string, clients)
	var wg sync.WaitGroup
	for i := range clients {
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		tr := client.NewTransport(client.Options{Base: base, ClientID: fmt.Sprintf("e2e-kill9-%d", i), Replicated: true, Timeout: 20 * time.Second})
		c := &http.Client{Transport: tr}
		wg.Go(func() {
			for n := range perClient {
				v, err := increment(ctx, c, door)
				if err != nil {
					errs[i] = append(errs[i], fmt.Sprintf("call %d: %v", n+1, err))
				} else {
					values[i] = append(values[i], v)
				}
				if answered.Add(1) >= total/4 {
					once.Do(func() { close(quarter) })
				}
			}
		})
	}
	select {
	case <-quarter:
	case <-ctx.Done():
		t.Fatalf("a quarter of the calls not answered: %v", ctx.Err())
	}
	reps[0].counter.Kill9(ctx, t)
	reps[1].agent.Kill9(ctx, t)
	atKill := answered.Load()
	wg.Wait()

	if atKill >= total {
		t.Errorf("the kills came after the last call (%d of %d answered): nothing was tested", atKill, total)
	}
	seen := map[int64]bool{}
	for i := range clients {
		for _, e := range errs[i] {
			t.Errorf("client %d: %s", i, e)
		}
		for _, v := range values[i] {
			if seen[v] || v < 1 || v > total {
				t.Errorf("client %d got the value %d: twice, or outside 1..%d (a call ran twice)", i, v, total)
			}
			seen[v] = true
		}
	}
	t.Logf("%d calls, the kills done after %d", total, atKill)
	waitCounters(ctx, t, hc, reps, total)
}
