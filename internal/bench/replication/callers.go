package replication

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// The two other topologies of seed 001, with 2 replicas:
//
//   - relay→bridge (MEAD's set-up): client → an unreplicated "fulcrum
//     backend relay --next <the counter group's bridge>" → bridge →
//     replicated counters;
//   - bridge→relays (replicated callers): client → the relay group's
//     bridge → relays, each behind "fulcrum agent replicated" and calling
//     through it (--proxy) → one plain "fulcrum backend counter --dedup".
//     Every relay makes each outgoing call; the balancer forwards it once.

// callerProcs are the processes of the two topologies.
type callerProcs struct {
	// front is the unreplicated relay in front of the counters' bridge.
	front *counter
	// callee is the plain counter the replicated relays call.
	callee *counter
	// relays are the relay group's replicas: a relay and its agent.
	relays []*replica
}

func (c *callerProcs) stop() {
	for _, r := range c.relays {
		r.agent.Stop(time.Second)
		r.proc.Stop(time.Second)
	}
	for _, p := range []*counter{c.front, c.callee} {
		if p != nil {
			p.proc.Stop(time.Second)
		}
	}
}

// callersCheck is what the replicated-callers run asserted.
type callersCheck struct {
	// Calls are the calls the clients made to the relay group (each
	// answered once).
	Calls int64 `json:"calls"`
	// CalleeValue is the plain counter's value after the run: Calls when
	// each outgoing call was applied exactly once.
	CalleeValue int64 `json:"callee_value"`
	// RelayIncrements is each relay's count of applied increments (equal
	// states: one value).
	RelayIncrements uint64 `json:"relay_increments"`
}

// startCallers starts the unreplicated relay in front of the counters'
// bridge, the deduplicating callee and n replicated relays.
func (s *setup) startCallers(ctx context.Context, n int) error {
	front, err := s.startBackend(ctx, "relay-front", nil, "relay", "--listen", "127.0.0.1:0", "--next", s.bal.FrontDoor(groupReplicated))
	if err != nil {
		return err
	}
	s.callers.front = &front
	callee, err := s.startBackend(ctx, "counter-callee", nil, "counter", "--listen", "127.0.0.1:0", "--dedup")
	if err != nil {
		return err
	}
	s.callers.callee = &callee
	for i := range n {
		if err := s.addRelay(ctx, i+1); err != nil {
			return err
		}
	}
	if err := s.bal.WaitReady(ctx, groupRelays, n, false); err != nil {
		return err
	}
	_, err = s.relaysConverged(ctx, 30*time.Second)
	return err
}

// addRelay starts relay i and its agent. The relay's --proxy is its
// agent, whose --target is the relay: the agent's address is taken first.
func (s *setup) addRelay(ctx context.Context, i int) error {
	agentAddr, err := bench.FreeAddr()
	if err != nil {
		return err
	}
	rel, err := s.startBackend(ctx, fmt.Sprintf("relay-%d", i), nil, "relay", "--listen", "127.0.0.1:0",
		"--next", s.callers.callee.url, "--proxy", "http://"+agentAddr)
	if err != nil {
		return err
	}
	dir, err := s.env.ScratchDir(s.env.UniqueName(fmt.Sprintf("relay-agent-%d", i)))
	if err != nil {
		rel.proc.Stop(0)
		return err
	}
	lines := make(chan string, 1)
	p, err := s.env.Start(bench.ProcSpec{Name: s.env.UniqueName(fmt.Sprintf("relay-agent-%d", i)), Path: s.bin, FirstLine: lines,
		Args: []string{"agent", "replicated", "--target", rel.url, "--listen", agentAddr, "--register", s.bal.Admin, "--group", groupRelays, "--data-dir", dir}})
	if err != nil {
		rel.proc.Stop(0)
		return err
	}
	s.callers.relays = append(s.callers.relays, &replica{counter: rel, agent: p})
	addr, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
	if err != nil {
		return err
	}
	s.callers.relays[len(s.callers.relays)-1].address = addr
	return nil
}

// relaysConverged waits until the relays' states (GET /fulcrum/state) are
// equal byte for byte and returns it.
func (s *setup) relaysConverged(ctx context.Context, within time.Duration) (backend.CounterState, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var states [][]byte
	for {
		states = states[:0]
		same := true
		for _, r := range s.callers.relays {
			b, err := s.state(ctx, r.url)
			if err != nil {
				same = false
				break
			}
			same = same && (len(states) == 0 || bytes.Equal(b, states[0]))
			states = append(states, b)
		}
		if same && len(states) > 0 {
			return backend.ParseCounterState(states[0])
		}
		select {
		case <-ctx.Done():
			return backend.CounterState{}, fmt.Errorf("replication: the relays' states did not become equal within %s: %q", within, states)
		case <-tick.C:
		}
	}
}

// state reads a server's GET /fulcrum/state.
func (s *setup) state(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/fulcrum/state", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, backend.MaxStateBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/fulcrum/state: %s: %s", url, resp.Status, b)
	}
	return b, nil
}

// callerClients are the client counts of the two topologies: fewer points
// than the main one.
func callerClients(s settings) []int {
	if s.Clients == 1 {
		return []int{1}
	}
	return []int{1, s.Clients}
}

// measureViaRelay runs plain clients against the unreplicated relay in
// front of the counters' bridge and returns the rows and the requests the
// counter group applied (one per call).
func measureViaRelay(ctx context.Context, set *setup, s settings, replicas int) ([]row, int64, error) {
	var rows []row
	var applied int64
	for _, c := range callerClients(s) {
		runs := runClients(ctx, set.callers.front.url, plain, c, s.Invocations, time.Time{}, fmt.Sprintf("via-relay%d", c))
		rw, d, err := summarise(configViaRelay, plain, replicas, c, runs, s.Discard)
		if err != nil {
			return nil, 0, err
		}
		applied += d
		rows = append(rows, rw)
		set.env.Logf("%s, %d replicas, %d plain clients: RTT p50 %.3f ms", configViaRelay, replicas, c, rw.RTTP50MS)
	}
	return rows, applied, nil
}

// measureCallers runs protocol-aware clients against the relay group's
// bridge and checks that the callee applied each outgoing call exactly
// once (its value is the number of calls) and that the relays' states are
// equal, with as many increments as calls.
func measureCallers(ctx context.Context, set *setup, s settings) ([]row, callersCheck, error) {
	var rows []row
	var chk callersCheck
	for _, c := range callerClients(s) {
		runs := runClients(ctx, set.bal.FrontDoor(groupRelays), aware, c, s.Invocations, time.Time{}, fmt.Sprintf("callers%d", c))
		rw, d, err := summarise(configCallers, aware, len(set.callers.relays), c, runs, s.Discard)
		if err != nil {
			return nil, chk, err
		}
		chk.Calls += d
		rows = append(rows, rw)
		set.env.Logf("%s, %d replicas, %d aware clients: RTT p50 %.3f ms (append %.3f, wait %.3f)", configCallers, len(set.callers.relays), c, rw.RTTP50MS, rw.AppendP50MS, rw.WaitP50MS)
	}
	st, err := set.relaysConverged(ctx, 30*time.Second)
	if err != nil {
		return nil, chk, err
	}
	chk.RelayIncrements = st.Increments
	if chk.CalleeValue, err = set.value(ctx, set.callers.callee.url); err != nil {
		return nil, chk, err
	}
	switch {
	case chk.CalleeValue != chk.Calls:
		return nil, chk, fmt.Errorf("replication: replicated callers: the deduplicating callee's counter is %d after %d calls, want each outgoing call applied exactly once", chk.CalleeValue, chk.Calls)
	case int64(st.Increments) != chk.Calls:
		return nil, chk, fmt.Errorf("replication: replicated callers: the relays applied %d increments after %d calls, want one each", st.Increments, chk.Calls)
	}
	return rows, chk, nil
}

// measureTopologies starts the two topologies' processes, measures them
// and stops the processes of the replicated callers. It returns their
// rows and the requests the counter group applied.
func measureTopologies(ctx context.Context, set *setup, s settings) ([]row, int64, callersCheck, error) {
	if err := set.startCallers(ctx, 2); err != nil {
		return nil, 0, callersCheck{}, fmt.Errorf("replication: starting the relays: %w", err)
	}
	rows, applied, err := measureViaRelay(ctx, set, s, len(set.live()))
	if err != nil {
		return nil, 0, callersCheck{}, err
	}
	more, chk, err := measureCallers(ctx, set, s)
	if err != nil {
		return nil, 0, chk, err
	}
	set.env.Logf("replicated callers: %d calls, the deduplicating callee at %d, the relays' states equal (%d increments each)", chk.Calls, chk.CalleeValue, chk.RelayIncrements)
	set.callers.stop()
	set.callers = callerProcs{}
	return append(rows, more...), applied, chk, nil
}
