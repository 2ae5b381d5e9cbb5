package giopagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

// lb is a real balancer over a real store behind its admin API.
type lb struct {
	t     *testing.T
	admin string
}

func startBalancer(t *testing.T) *lb {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: quiet, AdminURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.New(b, api.Options{Logger: quiet})
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	return &lb{t: t, admin: srv.URL}
}

func (l *lb) do(method, path string, body any, out any) {
	l.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			l.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, l.admin+path, rd)
	if err != nil {
		l.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		l.t.Fatalf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			l.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

type groupStatus struct {
	Reference struct {
		Corbaloc string `json:"corbaloc"`
		IOR      string `json:"ior"`
	} `json:"reference"`
	Replicas []struct {
		ID       string             `json:"id"`
		Address  string             `json:"address"`
		State    string             `json:"state"`
		Metrics  map[string]float64 `json:"metrics"`
		Advisory string             `json:"advisory"`
		Epoch    uint64             `json:"epoch"`
	} `json:"replicas"`
}

func (l *lb) group(name string) groupStatus {
	l.t.Helper()
	var g groupStatus
	l.do(http.MethodGet, "/v1/groups/"+name, nil, &g)
	return g
}

// agentUnderTest is an agent with its monitor, in front of a servant.
type agentUnderTest struct {
	a    *giopagent.Agent
	mon  *monitor.Monitor
	addr string
	ref  ior.IOR
	id   string // replica id
}

// startRegisteredAgent runs an agent in front of s, registered in group.
func startRegisteredAgent(t *testing.T, l *lb, group string, s *servant) *agentUnderTest {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ref := giopagent.Reference(s.ref, "", "127.0.0.1", port)
	mon, err := monitor.New(monitor.Options{Admin: l.admin, Group: group, Address: ref.String(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	a, err := giopagent.New(giopagent.Options{Target: s.ref, Monitor: mon, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		mon.Close(ctx)
		a.Close()
		<-done
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := mon.WaitRegistered(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &agentUnderTest{a: a, mon: mon, addr: ln.Addr().String(), ref: ref, id: reg.ID}
}

func putGIOPGroup(l *lb, name string, extra map[string]any) {
	g := map[string]any{"protocol": "giop", "front_door": "127.0.0.1:0", "report_interval": "20ms", "binding": "on-demand"}
	for k, v := range extra {
		g[k] = v
	}
	l.do(http.MethodPut, "/v1/groups/"+name, g, nil)
}

// TestAccountingReachesBalancer: calls held at the servant show as calls
// in flight in the reports the balancer gets, and calls as a rate; the
// replica is registered with the agent's own reference, typed.
func TestAccountingReachesBalancer(t *testing.T) {
	t.Parallel()
	l := startBalancer(t)
	putGIOPGroup(l, "acct", nil)
	s := startServant(t)
	ag := startRegisteredAgent(t, l, "acct", s)

	g := l.group("acct")
	if len(g.Replicas) != 1 {
		t.Fatalf("replicas %+v, want the agent", g.Replicas)
	}
	reg, err := ior.Parse(g.Replicas[0].Address)
	if err != nil {
		t.Fatalf("registered address %q: %v", g.Replicas[0].Address, err)
	}
	p, _ := reg.IIOP()
	if reg.TypeID != giop.PrimeRepoID || net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port))) != ag.addr || string(p.ObjectKey) != string(servantKey) {
		t.Fatalf("registered reference %+v, want %s at %s with the servant's key", reg, giop.PrimeRepoID, ag.addr)
	}

	rc := dialRaw(t, ag.addr)
	for range 3 {
		rc.send(rc.request(giop.V12, cdr.BigEndian, opHold, 1))
	}
	waitFor(t, 10*time.Second, "3 calls in flight in the balancer's view", func() bool {
		r := l.group("acct").Replicas[0]
		return r.Metrics["inflight"] == 3
	})
	s.release()
	for range 3 {
		if _, ok := rc.recv().(*giop.Reply); !ok {
			t.Fatal("held call not answered")
		}
	}
	// A steady stream of calls shows as a rate, with nothing left in flight.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := dialRaw(t, ag.addr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.call(c.request(giop.V10, cdr.LittleEndian, giop.OpIsPrime, 101))
		}
	}()
	waitFor(t, 10*time.Second, "a call rate in the balancer's view", func() bool {
		return l.group("acct").Replicas[0].Metrics["rps"] > 10
	})
	close(stop)
	wg.Wait()
	waitFor(t, 10*time.Second, "no call in flight", func() bool {
		return l.group("acct").Replicas[0].Metrics["inflight"] == 0
	})
}

// forwardOf returns the reference a LOCATION_FORWARD reply carries.
func forwardOf(t *testing.T, m giop.Message) (*giop.Reply, ior.IOR) {
	t.Helper()
	rep, ok := m.(*giop.Reply)
	if !ok || rep.Status != giop.StatusLocationForward {
		t.Fatalf("answer %T %+v, want a LOCATION_FORWARD reply", m, m)
	}
	ref, err := rep.Forward()
	if err != nil {
		t.Fatal(err)
	}
	return rep, ref
}

// TestDrainForwardsToGroup drains the agent's replica: every call is then
// answered with LOCATION_FORWARD to the group's reference, typed, in the
// request's version and byte order, without reaching the servant; once
// active again, calls pass.
func TestDrainForwardsToGroup(t *testing.T) {
	t.Parallel()
	l := startBalancer(t)
	putGIOPGroup(l, "dr", nil)
	s := startServant(t)
	ag := startRegisteredAgent(t, l, "dr", s)
	group, err := ior.ParseCorbaloc(l.group("dr").Reference.Corbaloc)
	if err != nil {
		t.Fatal(err)
	}
	l.do(http.MethodPost, "/v1/groups/dr/replicas/"+ag.id+"/drain", nil, nil)
	waitFor(t, 10*time.Second, "the drain advisory at the agent", func() bool { return ag.mon.Advisory().Advisory == "drain" })

	rc := dialRaw(t, ag.addr)
	before := s.calls.Load()
	for _, v := range versions {
		for _, o := range orders {
			req := rc.request(v, o, giop.OpIsPrime, 7)
			rc.send(req)
			rep, ref := forwardOf(t, rc.recv())
			if rep.Version != v || rep.Order != o || rep.RequestID != req.RequestID {
				t.Errorf("forward GIOP %v %v id %d to request GIOP %v %v id %d", rep.Version, rep.Order, rep.RequestID, v, o, req.RequestID)
			}
			p, ok := ref.IIOP()
			g := group.Addresses[0]
			if !ok || ref.TypeID != giop.PrimeRepoID || p.Host != g.Host || p.Port != g.Port || string(p.ObjectKey) != "dr" {
				t.Errorf("forwarded to %+v, want the group dr at %s:%d typed %s", ref, g.Host, g.Port, giop.PrimeRepoID)
			}
		}
	}
	if got := s.calls.Load() - before; got != 0 {
		t.Errorf("%d forwarded calls reached the servant", got)
	}
	l.do(http.MethodPost, "/v1/groups/dr/replicas/"+ag.id+"/activate", nil, nil)
	waitFor(t, 10*time.Second, "the advisory back to nominal", func() bool { return ag.mon.Advisory().Advisory == "nominal" })
	if ok, err := rc.call(rc.request(giop.V12, cdr.BigEndian, giop.OpIsPrime, 7)).BooleanResult(); err != nil || !ok {
		t.Fatalf("call after activation: %v, %v", ok, err)
	}
}

// TestHighAdvisoryForwardsOncePerEpoch: two clients load one agent's
// replica while another replica of the group idles; least-loaded's high
// advisory names a client to move, and that client gets exactly one
// LOCATION_FORWARD while the advisory's epoch lasts, its other calls
// passing on (these raw clients do not follow forwards, so it stays).
func TestHighAdvisoryForwardsOncePerEpoch(t *testing.T) {
	t.Parallel()
	l := startBalancer(t)
	putGIOPGroup(l, "hi", map[string]any{"strategy": "least-loaded", "report_interval": "100ms"})
	busy := startRegisteredAgent(t, l, "hi", startServant(t))
	startRegisteredAgent(t, l, "hi", startServant(t))

	type record struct {
		epoch     uint64
		forwarded bool
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	calls := map[string][]record{} // by client id (its local address as the agent sees it)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := dialRaw(t, busy.addr)
			id := rc.c.LocalAddr().String()
			pace := time.NewTicker(time.Duration(2+3*i) * time.Millisecond) // two different rates
			defer pace.Stop()
			for ctx.Err() == nil {
				<-pace.C
				e0 := busy.mon.Advisory().Epoch
				req := rc.request(giop.V12, cdr.LittleEndian, giop.OpIsPrime, 11)
				rc.send(req)
				m := rc.recv()
				e1 := busy.mon.Advisory().Epoch
				rep := m.(*giop.Reply)
				if e0 != e1 {
					continue // the epoch changed during the call: cannot tell which it belongs to
				}
				mu.Lock()
				calls[id] = append(calls[id], record{epoch: e0, forwarded: rep.Status == giop.StatusLocationForward})
				mu.Unlock()
			}
		}()
	}
	// Done when some client was forwarded in an epoch and then made at
	// least 10 more calls in that same epoch.
	verdict := func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for id, rs := range calls {
			perEpoch := map[uint64][2]int{} // forwards, calls after the first forward
			for _, r := range rs {
				c := perEpoch[r.epoch]
				if r.forwarded {
					c[0]++
				} else if c[0] > 0 {
					c[1]++
				}
				perEpoch[r.epoch] = c
			}
			for e, c := range perEpoch {
				if c[0] > 1 {
					return true, fmt.Sprintf("client %s forwarded %d times in epoch %d", id, c[0], e)
				}
				if c[0] == 1 && c[1] >= 10 {
					return true, ""
				}
			}
		}
		return false, ""
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var fail string
	for {
		done, msg := verdict()
		if done {
			fail = msg
			break
		}
		select {
		case <-ctx.Done():
			fail = fmt.Sprintf("no client was forwarded once and then served in the same epoch; advisory %+v, forwards %d", busy.mon.Advisory(), busy.a.Forwards())
		case <-tick.C:
			continue
		}
		break
	}
	cancel()
	wg.Wait()
	if fail != "" {
		t.Fatal(fail)
	}
	// Every epoch, every client: at most one forward.
	mu.Lock()
	defer mu.Unlock()
	for id, rs := range calls {
		n := map[uint64]int{}
		for _, r := range rs {
			if r.forwarded {
				n[r.epoch]++
			}
		}
		for e, k := range n {
			if k > 1 {
				t.Errorf("client %s forwarded %d times in epoch %d", id, k, e)
			}
		}
	}
}
