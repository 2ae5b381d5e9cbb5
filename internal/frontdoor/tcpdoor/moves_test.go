package tcpdoor_test

import (
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
)

// dialFrom connects to addr from local address ip (a loopback address of
// its own), every later I/O bounded by waitBound.
func dialFrom(t *testing.T, ip, addr string) *net.TCPConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitBound}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitBound))
	return c.(*net.TCPConn)
}

// Every connection from a client address with a planned move goes to the
// replica the move names, whatever the strategy would pick, and tells the
// group it bound that address there (moved), so that the analyzer
// completes the move; connections from other addresses are picked as
// usual and bind nothing.
func TestPlannedMoveNextConnection(t *testing.T) {
	t.Parallel()
	r0, r1 := newServer(t, echo("r0")), newServer(t, echo("r1"))
	g := newGroup(t, []string{r0.addr(), r1.addr()}, groupOptions{})
	snap := g.Snapshot()
	snap.Planned = map[string]*frontdoor.Member{"127.0.0.5": snap.Members["r1"]}
	d := startDoor(t, g, tcpdoor.Options{})
	for i := range 3 {
		c := dialFrom(t, "127.0.0.5", d.addr)
		if got := roundTrip(t, c, "moved"); got != "r1 moved\n" {
			t.Fatalf("connection %d of the planned client answered %q, want r1's", i, got)
		}
		if b := recv(t, g.bound, "the planned binding"); b != (binding{"r1", "127.0.0.5", true}) {
			t.Fatalf("connection %d bound %+v, want the planned client's move to r1", i, b)
		}
	}
	seen := map[string]bool{}
	for range 2 {
		c := dialFrom(t, "127.0.0.6", d.addr)
		got := roundTrip(t, c, "x")
		seen[got] = true
	}
	if !seen["r0 x\n"] || !seen["r1 x\n"] {
		t.Errorf("an unplanned client's connections answered %v, want both replicas (round robin)", seen)
	}
	if n := len(g.bound); n != 0 {
		t.Errorf("%d bindings told for connections of a client with no planned move, want none", n)
	}
}
