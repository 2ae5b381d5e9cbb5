package tcpdoor_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Bytes go both ways; the client's half-close reaches the replica, whose
// last words still come back; the table counts the bytes and drops the
// entry; the replica is observed healthy.
func TestProxyBothWaysHalfClose(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	if got := roundTrip(t, c, "hello"); got != "r0 hello\n" {
		t.Fatalf("answer %q, want %q", got, "r0 hello\n")
	}
	snap := g.Snapshot()
	if list := snap.Conns.List(0, 10, time.Now()); list.Total != 1 || list.Connections[0].Replica != "r0" || list.Connections[0].Client != c.LocalAddr().String() {
		t.Fatalf("connection table = %+v, want the client's connection to r0", list)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := readEOF(t, c); got != "bye r0\n" {
		t.Fatalf("after the half-close got %q, want %q", got, "bye r0\n")
	}
	if o := recv(t, g.obs, "the observation"); o != (observation{"r0", false}) {
		t.Errorf("observed %+v, want r0 healthy", o)
	}
	eventually(t, "the entry is removed", func() bool { return snap.Conns.Len() == 0 })
	tot := snap.Conns.Totals()["r0"]
	if tot.BytesIn != 6 || tot.BytesOut != uint64(len("r0 hello\nbye r0\n")) || tot.Accepted != 1 {
		t.Errorf("totals = %+v, want 6 bytes in, %d out, 1 accepted", tot, len("r0 hello\nbye r0\n"))
	}
	if n := snap.Members["r0"].Counters.Proxied.Load(); n != 1 {
		t.Errorf("Proxied = %d, want 1", n)
	}
	if n := snap.Members["r0"].Replica.Live.Inflight.Load(); n != 0 {
		t.Errorf("Inflight after the end = %d, want 0 (slot released)", n)
	}
}

// A bulk transfer larger than a chunk arrives whole, in both directions.
func TestProxyBulk(t *testing.T) {
	t.Parallel()
	r := newServer(t, func(c net.Conn) {
		defer c.Close()
		_, _ = io.Copy(c, c) // echo everything, then close at EOF
	})
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	const size = 3<<20 + 12345
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	go func() {
		_, _ = c.Write(payload)
		_ = c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size || string(got) != string(payload) {
		t.Fatalf("got %d bytes back, want the %d sent", len(got), size)
	}
	snap := g.Snapshot()
	eventually(t, "the entry is removed", func() bool { return snap.Conns.Len() == 0 })
	if tot := snap.Conns.Totals()["r0"]; tot.BytesIn != size || tot.BytesOut != size {
		t.Errorf("totals = %+v, want %d each way", tot, size)
	}
}

// A replica that refuses the connect is observed failed and the next one
// takes the connection: the client notices nothing.
func TestConnectRefusedNextReplica(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	r := newServer(t, echo("r1"))
	g := newGroup(t, []string{dead, r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	for i := range 4 {
		c := dial(t, d.addr)
		if got := roundTrip(t, c, "x"); got != "r1 x\n" {
			t.Fatalf("connection %d answered %q, want r1", i, got)
		}
		c.Close()
	}
	waitObservation(t, g, observation{"r0", true})
	if n := g.Snapshot().Members["r0"].Replica.Live.Inflight.Load(); n != 0 {
		t.Errorf("r0's Inflight = %d after failed connects, want 0", n)
	}
}

// Every replica refusing: the client's connection is closed and counted.
func TestConnectNoReplica(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	g := newGroup(t, []string{dead}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	if got := readEOF(t, c); got != "" {
		t.Fatalf("got %q from a group with no reachable replica", got)
	}
	eventually(t, "the refusal is counted", func() bool {
		return g.Snapshot().Conns.Refusals()[conntable.RefuseNoReplica] == 1
	})
}

// Idle for timeouts.idle: both sides are closed; the replica answered, so
// it is healthy.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{timeouts: protocol.Timeouts{Idle: protocol.Duration(200 * time.Millisecond)}})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	roundTrip(t, c, "hi")
	last := time.Now()
	if got := readEOF(t, c); got != "" {
		t.Fatalf("got %q after the idle timeout", got)
	}
	if idle := time.Since(last); idle < 200*time.Millisecond {
		t.Errorf("closed after %v idle, want at least the 200ms idle timeout", idle)
	}
	if o := recv(t, g.obs, "the observation"); o != (observation{"r0", false}) {
		t.Errorf("observed %+v, want r0 healthy (it answered)", o)
	}
	replicaSide := recv(t, r.accepted, "the replica's connection")
	_ = replicaSide.SetReadDeadline(time.Now().Add(waitBound))
	if _, err := replicaSide.Read(make([]byte, 1)); err == nil {
		t.Error("the replica's side is still open after the idle timeout")
	}
}

// Bytes flowing one way only keep the connection open past the idle
// timeout: idle means no bytes either way.
func TestIdleTimeoutOneWayTraffic(t *testing.T) {
	t.Parallel()
	r := newServer(t, hang)
	g := newGroup(t, []string{r.addr()}, groupOptions{timeouts: protocol.Timeouts{Idle: protocol.Duration(150 * time.Millisecond)}})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	tick := time.NewTicker(30 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for time.Since(start) < 600*time.Millisecond {
		<-tick.C
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("write after %v: %v (closed while the client was sending)", time.Since(start), err)
		}
	}
	snap := g.Snapshot()
	if snap.Conns.Len() != 1 {
		t.Fatalf("the connection left the table while bytes flowed")
	}
	// Then silence: closed, and the replica, which took bytes and
	// answered none, failed.
	if got := readEOF(t, c); got != "" {
		t.Fatalf("got %q", got)
	}
	if o := recv(t, g.obs, "the observation"); o != (observation{"r0", true}) {
		t.Errorf("observed %+v, want r0 failed", o)
	}
}

// A replica that accepts and never answers: the client gets a closed
// connection after the idle timeout and the replica is observed failed.
func TestReplicaHangs(t *testing.T) {
	t.Parallel()
	r := newServer(t, hang)
	g := newGroup(t, []string{r.addr()}, groupOptions{timeouts: protocol.Timeouts{Idle: protocol.Duration(150 * time.Millisecond)}})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	if _, err := io.WriteString(c, "anyone?\n"); err != nil {
		t.Fatal(err)
	}
	if got := readEOF(t, c); got != "" {
		t.Fatalf("got %q from a hanging replica", got)
	}
	if o := recv(t, g.obs, "the observation"); o != (observation{"r0", true}) {
		t.Errorf("observed %+v, want r0 failed", o)
	}
}

// max_connection_age closes an old connection at its next idle moment
// (protocol.IdleMoment without a byte either way), not before.
func TestMaxConnectionAge(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{tcp: protocol.TCP{MaxConnectionAge: protocol.Duration(100 * time.Millisecond)}})
	d := startDoor(t, g, tcpdoor.Options{})
	opened := time.Now()
	c := dial(t, d.addr)
	roundTrip(t, c, "one")
	last := time.Now()
	if got := readEOF(t, c); got != "" {
		t.Fatalf("got %q", got)
	}
	if age := time.Since(opened); age < 100*time.Millisecond {
		t.Errorf("closed at age %v, before max_connection_age", age)
	}
	if idle := time.Since(last); idle < protocol.IdleMoment {
		t.Errorf("closed after %v without bytes, want at least the idle moment %v", idle, protocol.IdleMoment)
	}
	if idle := time.Since(last); idle > protocol.IdleMoment+5*time.Second {
		t.Errorf("closed only after %v idle", idle)
	}
}

// Shutdown lets an open connection go on until ctx ends, then closes it.
func TestShutdownClosesAtDeadline(t *testing.T) {
	t.Parallel()
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	roundTrip(t, c, "a")
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- d.s.Shutdown(ctx) }()
	// Still served while shutting down.
	eventually(t, "the listener is closed", func() bool {
		nc, err := net.DialTimeout("tcp", d.addr, waitBound)
		if err != nil {
			return true
		}
		nc.Close()
		return false
	})
	if got := roundTrip(t, c, "b"); got != "r0 b\n" {
		t.Fatalf("during Shutdown the connection answered %q", got)
	}
	cancel()
	if err := recv(t, done, "Shutdown"); err == nil {
		t.Error("Shutdown = nil after its context ended with a connection open")
	}
	if got := readEOF(t, c); got != "" {
		t.Fatalf("got %q", got)
	}
}

// The derived connection cap leaves two descriptors per connection and a
// reserve.
func TestDerivedMaxConnections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{
		{0, 10_000}, {64, 16}, {1024, (1024 - tcpdoor.DescriptorReserve) / 2},
		{1 << 20, (1<<20 - tcpdoor.DescriptorReserve) / 2}, {1 << 62, tcpdoor.MaxDerivedConnections},
	} {
		if got := tcpdoor.DerivedMaxConnections(tc.nofile); got != tc.want {
			t.Errorf("DerivedMaxConnections(%d) = %d, want %d", tc.nofile, got, tc.want)
		}
	}
}
