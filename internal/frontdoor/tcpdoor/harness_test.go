package tcpdoor_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// waitBound bounds every wait in these tests; nothing waits by sleeping.
const waitBound = 10 * time.Second

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// observation is one Group.Observe call.
type observation struct {
	replica string
	failed  bool
}

// binding is one Group.Bound call.
type binding struct {
	replica, client string
	moved           bool
}

// testGroup is a frontdoor.Group over a fixed snapshot; it records what
// the front door observes and binds.
type testGroup struct {
	snap  atomic.Pointer[frontdoor.Snapshot]
	obs   chan observation
	bound chan binding
}

func (g *testGroup) Snapshot() *frontdoor.Snapshot { return g.snap.Load() }
func (g *testGroup) Bound(m *frontdoor.Member, client string, moved bool) {
	select {
	case g.bound <- binding{m.ID(), client, moved}:
	default:
	}
}
func (g *testGroup) Observe(m *frontdoor.Member, _ time.Duration, failed bool) {
	select {
	case g.obs <- observation{m.ID(), failed}:
	default:
	}
}

// groupOptions shape a test group's snapshot.
type groupOptions struct {
	strategy string
	params   map[string]any
	timeouts protocol.Timeouts
	tcp      protocol.TCP
	maxInf   int
	affinity frontdoor.Affinity
}

// newGroup builds a group over replicas at addrs (ids r0, r1, ...).
func newGroup(t *testing.T, addrs []string, o groupOptions) *testGroup {
	t.Helper()
	g := &testGroup{obs: make(chan observation, 64), bound: make(chan binding, 64)}
	g.snap.Store(newSnapshot(t, addrs, o))
	return g
}

// benchSnapshot is a round-robin group's snapshot over one replica.
func benchSnapshot(b *testing.B, addr string) *frontdoor.Snapshot {
	return newSnapshot(b, []string{addr}, groupOptions{})
}

// newSnapshot builds the snapshot of a group over replicas at addrs.
func newSnapshot(t testing.TB, addrs []string, o groupOptions) *frontdoor.Snapshot {
	t.Helper()
	if o.strategy == "" {
		o.strategy = "round-robin"
	}
	s, err := strategy.New(o.strategy, o.params, strategy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	snap := &frontdoor.Snapshot{
		Group: "t", Binding: protocol.PerRequest, Members: map[string]*frontdoor.Member{},
		MaxInflight: o.maxInf, Timeouts: o.timeouts, TCP: o.tcp, Conns: conntable.New(), Affinity: o.affinity,
	}
	var reps []*strategy.Replica
	for i, a := range addrs {
		r := &strategy.Replica{Index: i, ID: "r" + strconv.Itoa(i), Address: a, Weight: 1, Metrics: strategy.NoMetrics, Live: new(strategy.Live)}
		m := &frontdoor.Member{Replica: r, Address: a, State: protocol.StateActive, Counters: new(frontdoor.Counters)}
		reps = append(reps, r)
		snap.Eligible = append(snap.Eligible, m)
		snap.Members[r.ID] = m
	}
	snap.Picker = s.Picker(reps)
	if k, ok := s.(strategy.Keyed); ok {
		snap.Key = k.KeySpec()
	}
	return snap
}

// door serves g on a loopback listener until the test ends.
type door struct {
	s    *tcpdoor.Server
	addr string
}

func startDoor(t *testing.T, g *testGroup, opts tcpdoor.Options) *door {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	s := tcpdoor.New(g, opts)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-served; !errors.Is(err, tcpdoor.ErrServerClosed) {
			t.Errorf("Serve = %v, want ErrServerClosed", err)
		}
	})
	return &door{s: s, addr: ln.Addr().String()}
}

// dial connects to addr with every later I/O bounded by waitBound.
func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitBound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitBound))
	return c.(*net.TCPConn)
}

// server is an in-test replica: a listener whose connections are handed
// to handle on their own goroutines; it reports each accepted connection.
type server struct {
	ln       net.Listener
	accepted chan net.Conn
	wg       sync.WaitGroup
}

func (s *server) addr() string { return s.ln.Addr().String() }

func newServer(t *testing.T, handle func(net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, accepted: make(chan net.Conn, 1024)}
	var mu sync.Mutex
	var conns []net.Conn
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case s.accepted <- c:
			default:
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// echo answers each line with name, a space and the line; at the client's
// EOF it writes "bye name\n" and closes.
func echo(name string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if errors.Is(err, io.EOF) {
					_, _ = io.WriteString(c, "bye "+name+"\n")
				}
				return
			}
			if _, err := io.WriteString(c, name+" "+line); err != nil {
				return
			}
		}
	}
}

// hang reads what comes and never answers, until the connection closes.
func hang(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// roundTrip writes line and reads one line back.
func roundTrip(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, got)
	}
	return got
}

// recv waits for a value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// eventually polls cond until it holds, within waitBound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-tick.C:
		}
	}
}

// readEOF reads c to its end and returns what came; it fails the test
// when the connection is not closed within waitBound.
func readEOF(t *testing.T, c net.Conn) string {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("read to EOF: %v (got %q)", err, b)
	}
	return string(b)
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// contextWithCancel is a context the test ends by hand.
func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func timeNow() time.Time { return time.Now() }

// waitObservation reads g's observations until want comes.
func waitObservation(t *testing.T, g *testGroup, want observation) {
	t.Helper()
	timeout := time.After(waitBound)
	for {
		select {
		case o := <-g.obs:
			if o == want {
				return
			}
		case <-timeout:
			t.Fatalf("no observation %+v", want)
		}
	}
}
