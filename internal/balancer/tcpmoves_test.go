package balancer_test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tcpDialFrom connects to a front door from local address ip (a loopback
// address, so that clients of one test have addresses of their own), every
// later I/O bounded.
func tcpDialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// In a tcp group the analyzer plans moves of client addresses: two
// clients on their own loopback addresses hold connections on replica a
// and exchange bytes while a's agent reports a high load and b's a low
// one. The analyzer plans a move of one of the two addresses (from the
// connection table's bytes; the agents list no clients) while both
// replicas' advisories stay nominal; that client's next connection lands
// on b and completes the move, and its open connection stays on a.
func TestTCPPlannedMoveNextConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	gs := tcpGroup("moves")
	gs.Strategy, gs.Replicas, gs.ReportInterval = "least-loaded", nil, ms(250)
	st := e.mustPutGroup(gs)
	a := e.mustRegister("moves", tcpEcho(t, "a"))
	clients := []string{"127.0.0.2", "127.0.0.3"}
	conns := map[string]net.Conn{}
	for _, ip := range clients {
		c := tcpDialFrom(t, ip, st.Listening)
		if got := tcpAsk(t, c, "hello"); got != "a hello\n" {
			t.Fatalf("client %s answered %q with a the only replica", ip, got)
		}
		conns[ip] = c
	}
	b := e.mustRegister("moves", tcpEcho(t, "b"))
	events := e.subscribe("moves")

	var planned []string
	for round := 0; len(planned) == 0; round++ {
		if round == 20 {
			t.Fatal("no move planned in 20 report intervals")
		}
		for _, ip := range clients {
			if got := tcpAsk(t, conns[ip], "ping "+ip); got != "a ping "+ip+"\n" {
				t.Fatalf("round %d: client %s answered %q", round, ip, got)
			}
		}
		reported := time.Now()
		for _, r := range []struct {
			token string
			load  float64
		}{{a.Token, 100}, {b.Token, 10}} {
			if adv := e.mustReport(r.token, protocol.Report{Load: r.load}); adv.Advisory != protocol.Nominal {
				t.Fatalf("round %d: advisory %+v; a tcp replica's agent cannot send a connection back", round, adv)
			}
		}
		waitEvent(t, events, 5*time.Second, stepAfter(reported, func(map[string]stepReplica) error { return nil }))
		planned = e.b.PlannedClients("moves")
	}
	if len(planned) != 1 || !slices.Contains(clients, planned[0]) {
		t.Fatalf("planned moves of %v, want one of the clients %v", planned, clients)
	}
	moved := planned[0]
	for _, r := range e.mustGroup("moves").Replicas {
		if r.Advisory != protocol.Nominal {
			t.Errorf("replica %s's advisory is %s with a move planned, want nominal", r.ID, r.Advisory)
		}
	}

	next := tcpDialFrom(t, moved, st.Listening)
	if got := tcpAsk(t, next, "next"); got != "b next\n" {
		t.Fatalf("the moved client's next connection answered %q, want b's", got)
	}
	waitEvent(t, events, 5*time.Second, func(ev balancer.Event) error {
		d, _ := ev.Data.(map[string]any)
		if ev.Type != "binding" || d["client"] != moved || d["replica"] != b.ID || d["planned"] != true {
			return fmt.Errorf("%s event %v, want the planned binding of %s to %s", ev.Type, ev.Data, moved, b.ID)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		if got := e.b.PlannedClients("moves"); slices.Contains(got, moved) {
			return fmt.Errorf("planned moves %v still hold %s after its move", got, moved)
		}
		return nil
	})
	if got := tcpAsk(t, conns[moved], "old"); !strings.HasPrefix(got, "a ") {
		t.Errorf("the moved client's open connection answered %q, want a's (it ends only at max_connection_age)", got)
	}
	if got := replicaOf(t, e.mustGroup("moves"), b.ID).Counters; got.Rebinds != 1 {
		t.Errorf("counters of the replica the client moved to: %+v, want 1 rebind", got)
	}
}
