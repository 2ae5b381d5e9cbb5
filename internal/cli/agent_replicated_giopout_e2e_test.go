package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var agentGIOPOutcallsRE = regexp.MustCompile(`(?m)^giop outcalls at (IOR:[0-9a-f]+)$`)

// replicatedGIOPRelay is "fulcrum agent replicated --giop --giop-listen"
// run in-process in front of a relay servant (tier 2) whose increment calls
// the callee through the reference the agent printed.
type replicatedGIOPRelay struct {
	counter *backend.Counter
	out     *syncBuffer
	errOut  *syncBuffer
	next    atomic.Pointer[orb.Object]
}

func startReplicatedGIOPRelay(t *testing.T, admin, group, callee string) *replicatedGIOPRelay {
	t.Helper()
	r := &replicatedGIOPRelay{counter: &backend.Counter{}, out: &syncBuffer{}, errOut: &syncBuffer{}}
	srv := backend.NewGIOPCounter(r.counter, backend.GIOPCounterOptions{Next: func(ctx context.Context) (int64, error) {
		obj := r.next.Load()
		if obj == nil {
			return 0, errors.New("the agent's outcall reference is not known yet")
		}
		return backend.CounterClient{Object: obj}.Increment(ctx)
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	target := srv.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port)).String()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	root := NewRoot()
	root.SetOut(r.out)
	root.SetErr(r.errOut)
	root.SetArgs([]string{"agent", "replicated", "--giop", "--target", target, "--listen", "127.0.0.1:0",
		"--giop-listen", "127.0.0.1:0", "--outcall-target", callee, "--register", admin, "--group", group, "--data-dir", t.TempDir()})
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent: %v\n%s", err, r.errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("agent did not stop within 10s of its context ending")
		}
	})
	o, err := orb.New(orb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	waitCLI(t, done, r.errOut, "the agent's outcall reference", func() bool {
		return agentGIOPOutcallsRE.MatchString(r.out.String())
	})
	obj, err := o.Resolve(agentGIOPOutcallsRE.FindStringSubmatch(r.out.String())[1])
	if err != nil {
		t.Fatal(err)
	}
	r.next.Store(obj)
	return r
}

// TestAgentReplicatedGIOPCallersEndToEnd runs two relay servants, each
// behind "fulcrum agent replicated --giop" and calling one plain Counter
// servant through the GIOP listener of its agent, against a real balancer
// with a replicated GIOP group: a Go ORB client's increments through the
// group's reference reach the callee once each (its counter equals the
// number of client calls although two replicas made every call), carrying
// FT_REQUEST relay/<position> retention 0, each key once; every relay gets
// the callee's answer, and both relays end in the same state.
func TestAgentReplicatedGIOPCallersEndToEnd(t *testing.T) {
	t.Parallel()
	admin, b := replicatedServer(t)
	callee := &backend.Counter{}
	calleeSrv := backend.NewGIOPCounter(callee, backend.GIOPCounterOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go calleeSrv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = calleeSrv.Shutdown(ctx)
	})
	// The balancer reaches the callee through a recorder of the
	// FT_REQUEST contexts of its requests.
	rec := startFTRecorder(t, ln.Addr().String())
	calleeRef := calleeSrv.Reference("127.0.0.1", rec.port).String()

	const calls = 12
	runGIOPCallers(t, admin, b, calleeRef, calls)
	if v := callee.State().Value; v != calls {
		t.Fatalf("the callee's counter is at %d, want %d: one increment per client call", v, calls)
	}
	checkFTKeys(t, rec.keys(), calls)
}

// TestAgentReplicatedGIOPCallersToAReplicatedCallee is the same with a
// replicated GIOP group as the callee (one Counter servant behind its
// agent, on the same balancer): the callee group orders one increment per
// client call, and a second copy of a forwarded call (what another
// balancer instance sends when the one that forwarded died before the
// reply: the same FT_REQUEST) gets the first one's reply and does not
// increment again.
func TestAgentReplicatedGIOPCallersToAReplicatedCallee(t *testing.T) {
	t.Parallel()
	admin, b := replicatedServer(t)
	if _, _, err := b.PutGroup(protocol.Group{Name: "counter", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0",
		Binding: protocol.BindingReplicated, ReportInterval: protocol.Duration(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	callee := startReplicatedGIOPCounter(t, admin, "counter")
	awaitReplicas(t, b, "counter", 1)
	st, err := b.Group("counter")
	if err != nil || st.Reference == nil {
		t.Fatalf("group status %+v, %v: want a reference", st, err)
	}
	door, err := ior.Parse(st.Reference.Corbaloc)
	if err != nil {
		t.Fatal(err)
	}
	dp, _ := door.IIOP()
	rec := startFTRecorder(t, net.JoinHostPort(dp.Host, strconv.Itoa(int(dp.Port))))
	calleeRef := ior.IOR{Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "127.0.0.1", Port: rec.port, ObjectKey: dp.ObjectKey}}}.String()

	const calls = 9
	runGIOPCallers(t, admin, b, calleeRef, calls)
	if v := callee.State().Value; v != calls {
		t.Fatalf("the callee group's counter is at %d, want %d: one increment per client call", v, calls)
	}
	keys := rec.keys()
	checkFTKeys(t, keys, calls)

	// The second copy of the first forwarded call.
	clientID := strings.TrimSuffix(keys[0], " 0")
	req := &giop.Request{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 7, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget(dp.ObjectKey), Operation: backend.OpIncrement,
		ServiceContexts: []giop.ServiceContext{{ID: ordered.ServiceFTRequest, Data: ordered.FTRequest{ClientID: clientID}.Encode(0)}}}
	nc, err := net.Dial("tcp", net.JoinHostPort(dp.Host, strconv.Itoa(int(dp.Port))))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wire.NewWriter(nc).Write(req); err != nil {
		t.Fatal(err)
	}
	raw, err := wire.NewReader(nc, giop.Limits{}).Next()
	if err != nil {
		t.Fatal(err)
	}
	m, err := giop.DecodeMessage(raw)
	rep, ok := m.(*giop.Reply)
	if err != nil || !ok || rep.Status != giop.StatusNoException {
		t.Fatalf("the second copy of %s: %v %v, want a NO_EXCEPTION reply", clientID, m, err)
	}
	d := rep.BodyDecoder()
	// Outcalls are forwarded one at a time in the relays' log order, so
	// the first recorded was the callee's first increment.
	if v := d.LongLong("result"); d.Err() != nil || v != 1 {
		t.Fatalf("the second copy of %s answered %d (%v), want the first copy's value, 1", clientID, v, d.Err())
	}
	if v := callee.State().Value; v != calls {
		t.Fatalf("after a second copy of %s the callee group's counter is at %d, want %d", clientID, v, calls)
	}
}

// runGIOPCallers sets up replicated GIOP group "relay" on b with two relay
// servants behind their agents calling calleeRef through them, orders
// calls increments from 3 Go ORB clients through the group's reference,
// and checks the answers (the k-th ordered call gets k from the callee,
// and the relay's counter is then k(k+1)/2) and that both relays end
// equal.
func runGIOPCallers(t *testing.T, admin string, b *balancer.Balancer, calleeRef string, calls int) {
	t.Helper()
	if _, _, err := b.PutGroup(protocol.Group{Name: "relay", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0",
		Binding: protocol.BindingReplicated, ReportInterval: protocol.Duration(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	r1, r2 := startReplicatedGIOPRelay(t, admin, "relay", calleeRef), startReplicatedGIOPRelay(t, admin, "relay", calleeRef)
	awaitReplicas(t, b, "relay", 2)
	st, err := b.Group("relay")
	if err != nil || st.Reference == nil {
		t.Fatalf("group status %+v, %v: want a reference", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			o, err := orb.New(orb.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer o.Close()
			obj, err := o.Resolve(st.Reference.Corbaloc)
			if err != nil {
				t.Error(err)
				return
			}
			for range calls / 3 {
				v, err := backend.CounterClient{Object: obj}.Increment(ctx)
				if err != nil {
					t.Errorf("increment through the group: %v", err)
					return
				}
				mu.Lock()
				got = append(got, v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var want []int64
	for k := int64(1); k <= int64(calls); k++ {
		want = append(want, k*(k+1)/2)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%d increments of the relays answered %v, want %v", calls, got, want)
	}
	awaitGroup(t, b, "relay", "both relays at the last value", func() bool {
		s1, s2 := r1.counter.State(), r2.counter.State()
		return s1 == s2 && s1.Value == want[calls-1]
	})
}

// awaitReplicas waits until n replicas of group report and are active.
func awaitReplicas(t *testing.T, b *balancer.Balancer, group string, n int) {
	t.Helper()
	awaitGroup(t, b, group, fmt.Sprintf("%d replicas reporting", n), func() bool {
		st, err := b.Group(group)
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, r := range st.Replicas {
			if r.ReportAgeMS != nil && r.State == "active" {
				live++
			}
		}
		return live == n
	})
}

// checkFTKeys checks that the callee got calls requests, each with an
// FT_REQUEST relay/<position> retention 0 of its own.
func checkFTKeys(t *testing.T, keys []string, calls int) {
	t.Helper()
	if len(keys) != calls {
		t.Fatalf("the callee got the FT_REQUEST keys %v, want %d", keys, calls)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if !ftKeyRE.MatchString(k) || seen[k] {
			t.Fatalf("the callee got the FT_REQUEST keys %v, want each relay/<position> retention 0 once", keys)
		}
		seen[k] = true
	}
}

// startReplicatedGIOPCounter runs a Counter servant behind "fulcrum agent
// replicated --giop" in group, in-process.
func startReplicatedGIOPCounter(t *testing.T, admin, group string) *backend.Counter {
	t.Helper()
	c := &backend.Counter{}
	srv := backend.NewGIOPCounter(c, backend.GIOPCounterOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	target := srv.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port)).String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	errOut := &syncBuffer{}
	root := NewRoot()
	root.SetOut(&syncBuffer{})
	root.SetErr(errOut)
	root.SetArgs([]string{"agent", "replicated", "--giop", "--target", target, "--listen", "127.0.0.1:0",
		"--register", admin, "--group", group, "--data-dir", t.TempDir()})
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent: %v\n%s", err, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("agent did not stop within 10s of its context ending")
		}
	})
	return c
}

var ftKeyRE = regexp.MustCompile(`^relay/[1-9][0-9]* 0$`)

// ftRecorder passes GIOP connections to a servant, recording the
// FT_REQUEST context ("<client_id> <retention_id>", or "none") of each
// Request.
type ftRecorder struct {
	port uint16
	mu   sync.Mutex
	seen []string
}

func (r *ftRecorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func startFTRecorder(t *testing.T, servant string) *ftRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &ftRecorder{port: uint16(ln.Addr().(*net.TCPAddr).Port)}
	var wg sync.WaitGroup
	var cmu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		cmu.Lock()
		conns = append(conns, c)
		cmu.Unlock()
	}
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", servant)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Go(func() {
				defer out.Close()
				_, _ = io.Copy(in, out)
			})
			wg.Go(func() {
				defer in.Close()
				wr := wire.NewReader(in, giop.Limits{})
				for {
					raw, err := wr.Next()
					if err != nil {
						return
					}
					if m, err := giop.DecodeMessage(raw); err == nil {
						if req, ok := m.(*giop.Request); ok {
							key := "none"
							if data, ok := giop.FindServiceContext(req.ServiceContexts, ordered.ServiceFTRequest); ok {
								ft, err := ordered.DecodeFTRequest(data)
								key = fmt.Sprintf("%s %d", ft.ClientID, ft.RetentionID)
								if err != nil {
									key = err.Error()
								}
							}
							r.mu.Lock()
							r.seen = append(r.seen, key)
							r.mu.Unlock()
						}
					}
					if _, err := out.Write(raw); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
		wg.Wait()
	})
	return r
}
