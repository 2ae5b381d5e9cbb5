package tcpdoor_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fullBacklog is a listening socket that never accepts, its backlog
// filled: a connect to it gets no answer (its SYNs are dropped) until the
// connector gives up.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "backlog")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()
	// Fill the queue until a connect goes unanswered.
	for i := 0; ; i++ {
		if i > 64 {
			t.Fatal("the backlog never filled")
		}
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return addr
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// A replica that does not answer the connect within timeouts.connect is
// observed failed and the next replica takes the connection.
func TestConnectTimeoutNextReplica(t *testing.T) {
	t.Parallel()
	silent := fullBacklog(t)
	r := newServer(t, echo("r1"))
	g := newGroup(t, []string{silent, r.addr()}, groupOptions{timeouts: protocol.Timeouts{Connect: protocol.Duration(150 * time.Millisecond)}})
	d := startDoor(t, g, tcpdoor.Options{})
	// Round robin starts anywhere: of two connections one picks r0 first.
	slowest := time.Duration(0)
	for range 2 {
		start := time.Now()
		c := dial(t, d.addr)
		if got := roundTrip(t, c, "x"); got != "r1 x\n" {
			t.Fatalf("answered %q, want r1", got)
		}
		slowest = max(slowest, time.Since(start))
		c.Close()
	}
	if slowest < 150*time.Millisecond {
		t.Errorf("the slowest connection answered after %v, before a connect timeout could pass", slowest)
	}
	waitObservation(t, g, observation{"r0", true})
}

// Beyond tcp.max_connections a connection is closed at once and counted;
// the ones admitted go on, and a freed place is taken again.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{tcp: protocol.TCP{MaxConnections: 2}})
	d := startDoor(t, g, tcpdoor.Options{})
	a, b := dial(t, d.addr), dial(t, d.addr)
	roundTrip(t, a, "a")
	roundTrip(t, b, "b")
	for range 20 {
		c := dial(t, d.addr)
		if got := readEOF(t, c); got != "" {
			t.Fatalf("a connection beyond the cap got %q", got)
		}
	}
	if n := g.Snapshot().Conns.Refusals()[conntable.RefuseMaxConnections]; n != 20 {
		t.Errorf("refused for max_connections = %d, want 20", n)
	}
	if got := roundTrip(t, a, "a2"); got != "r0 a2\n" {
		t.Errorf("an admitted connection answered %q during the flood", got)
	}
	a.Close()
	eventually(t, "the closed connection's place is free", func() bool { return d.s.Active() == 1 })
	c := dial(t, d.addr)
	if got := roundTrip(t, c, "c"); got != "r0 c\n" {
		t.Errorf("a connection after one closed answered %q", got)
	}
}

// max_inflight caps the connections open to one replica.
func TestPerReplicaCap(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{maxInf: 1})
	d := startDoor(t, g, tcpdoor.Options{})
	a := dial(t, d.addr)
	roundTrip(t, a, "a")
	b := dial(t, d.addr)
	if got := readEOF(t, b); got != "" {
		t.Fatalf("a connection beyond max_inflight got %q", got)
	}
	if n := g.Snapshot().Conns.Refusals()[conntable.RefuseReplicaLimit]; n != 1 {
		t.Errorf("refused for replica_limit = %d, want 1", n)
	}
	a.Close()
	eventually(t, "r0's slot is free", func() bool { return g.Snapshot().Members["r0"].Replica.Live.Inflight.Load() == 0 })
	c := dial(t, d.addr)
	if got := roundTrip(t, c, "c"); got != "r0 c\n" {
		t.Errorf("after the slot was freed the connection answered %q", got)
	}
}

// least-connections spreads open connections evenly: Live.Inflight counts
// each replica's open connections.
func TestLeastConnectionsSpreadsOpenConnections(t *testing.T) {
	t.Parallel()
	var addrs []string
	for i := range 3 {
		addrs = append(addrs, newServer(t, echo(fmt.Sprintf("r%d", i))).addr())
	}
	g := newGroup(t, addrs, groupOptions{strategy: "least-connections"})
	d := startDoor(t, g, tcpdoor.Options{})
	per := map[string]int{}
	for i := range 9 {
		c := dial(t, d.addr)
		got := roundTrip(t, c, "x")
		per[got[:2]]++
		if i == 4 {
			// Two closed: their replicas have room again.
			c.Close()
		}
	}
	snap := g.Snapshot()
	eventually(t, "the closed connection leaves the table", func() bool { return snap.Conns.Len() == 8 })
	open := map[string]int{}
	for _, e := range snap.Conns.Entries() {
		open[e.Replica]++
	}
	for _, id := range []string{"r0", "r1", "r2"} {
		if open[id] < 2 || open[id] > 3 {
			t.Errorf("open connections per replica = %v, want 2 or 3 each (least-connections)", open)
			break
		}
	}
}

// consistent-hash keyed by the client address sends each client (here
// given by a trusted PROXY header) to the same replica every time, and
// different clients over several replicas.
func TestConsistentHashByClientAddress(t *testing.T) {
	t.Parallel()
	var addrs []string
	for i := range 3 {
		addrs = append(addrs, newServer(t, echo(fmt.Sprintf("r%d", i))).addr())
	}
	g := newGroup(t, addrs, groupOptions{strategy: "consistent-hash", params: map[string]any{"key": "client-address"},
		tcp: protocol.TCP{ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"127.0.0.1"}}}})
	d := startDoor(t, g, tcpdoor.Options{})
	used := map[string]bool{}
	for i := range 12 {
		ip := fmt.Sprintf("198.51.100.%d", i+1)
		var first string
		for j := range 3 {
			c := dial(t, d.addr)
			fmt.Fprintf(c, "PROXY TCP4 %s 192.0.2.1 %d 80\r\n", ip, 40000+j)
			got := roundTrip(t, c, "x")
			c.Close()
			if j == 0 {
				first = got
			} else if got != first {
				t.Fatalf("client %s went to %q and then %q", ip, first, got)
			}
		}
		used[first] = true
	}
	if len(used) < 2 {
		t.Errorf("12 client addresses all went to one replica (%v)", used)
	}
}

// Connections keep the accept loop and other clients responsive: a
// client stuck before its PROXY header does not hold up the others, and
// is closed after the connect timeout.
func TestProxyHeaderTimeout(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{timeouts: protocol.Timeouts{Connect: protocol.Duration(100 * time.Millisecond)},
		tcp: protocol.TCP{ProxyProtocol: protocol.ProxyProtocol{Trusted: []string{"127.0.0.0/8"}}}})
	d := startDoor(t, g, tcpdoor.Options{})
	stuck := dial(t, d.addr)
	c := dial(t, d.addr)
	fmt.Fprintf(c, "PROXY TCP4 203.0.113.9 192.0.2.1 1234 80\r\n")
	if got := roundTrip(t, c, "x"); got != "r0 x\n" {
		t.Fatalf("answered %q", got)
	}
	if got := readEOF(t, stuck); got != "" {
		t.Fatalf("the stuck client got %q", got)
	}
	if n := g.Snapshot().Conns.Refusals()[conntable.RefuseProxyHeader]; n != 1 {
		t.Errorf("refused for proxy_header = %d, want 1", n)
	}
}

// Without tcp.max_connections the cap is derived from the descriptor
// limit: 8 descriptors allow 2 connections.
func TestDerivedCapApplies(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{DescriptorLimit: 8})
	a, b := dial(t, d.addr), dial(t, d.addr)
	roundTrip(t, a, "a")
	roundTrip(t, b, "b")
	c := dial(t, d.addr)
	if got := readEOF(t, c); got != "" {
		t.Fatalf("a third connection got %q", got)
	}
	if n := g.Snapshot().Conns.Refusals()[conntable.RefuseMaxConnections]; n != 1 {
		t.Errorf("refused for max_connections = %d, want 1", n)
	}
}
