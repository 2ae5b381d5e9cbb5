package tcpdoor_test

import (
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fixedAffinity decides every connection the same way and records what
// the front door tells it.
type fixedAffinity struct {
	d      frontdoor.AffinityDecision
	mu     sync.Mutex
	routed []string
	opened []string
	closed []string
}

func (a *fixedAffinity) RouteConn(ip string) frontdoor.AffinityDecision {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.routed = append(a.routed, ip)
	return a.d
}

func (a *fixedAffinity) Opened(_ frontdoor.AffinityDecision, replica string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.opened = append(a.opened, replica)
}

func (a *fixedAffinity) Closed(_ frontdoor.AffinityDecision, replica string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = append(a.closed, replica)
}

func (a *fixedAffinity) counts() (routed, opened, closed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.routed), len(a.opened), len(a.closed)
}

// The session table's replica takes every connection, whatever the
// strategy; Opened and Closed bracket each connection.
func TestAffinityReplica(t *testing.T) {
	t.Parallel()
	r0, r1 := newServer(t, echo("r0")), newServer(t, echo("r1"))
	aff := &fixedAffinity{d: frontdoor.AffinityDecision{Rule: 0, Kind: protocol.AffinitySingleton, Key: "k", Replica: "r1"}}
	g := newGroup(t, []string{r0.addr(), r1.addr()}, groupOptions{affinity: aff})
	d := startDoor(t, g, tcpdoor.Options{})
	for range 3 {
		c := dial(t, d.addr)
		if got := roundTrip(t, c, "x"); got != "r1 x\n" {
			t.Fatalf("answered %q, want r1 (the session's replica)", got)
		}
		c.Close()
		recv(t, g.obs, "the connection's end")
	}
	if routed, opened, closed := aff.counts(); routed != 3 || opened != 3 || closed != 3 {
		t.Errorf("RouteConn/Opened/Closed = %d/%d/%d, want 3 each", routed, opened, closed)
	}
	if aff.routed[0] != "127.0.0.1" {
		t.Errorf("RouteConn got %q, want the client's IP", aff.routed[0])
	}
}

// An object lost with its replica (Gone), or a session replica that
// cannot take the connection here, refuses the connection: it never goes
// elsewhere.
func TestAffinityRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		d      frontdoor.AffinityDecision
		maxInf int
	}{
		{"gone", frontdoor.AffinityDecision{Kind: protocol.AffinityClientActivated, Key: "127.0.0.1", Gone: true}, 0},
		{"unknown replica", frontdoor.AffinityDecision{Kind: protocol.AffinitySingleton, Replica: "r9"}, 0},
		{"at its limit", frontdoor.AffinityDecision{Kind: protocol.AffinitySingleton, Replica: "r0"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newServer(t, echo("r0"))
			aff := &fixedAffinity{d: tc.d}
			g := newGroup(t, []string{r.addr()}, groupOptions{affinity: aff, maxInf: tc.maxInf})
			if tc.maxInf > 0 {
				g.Snapshot().Members["r0"].Replica.Live.Inflight.Store(int64(tc.maxInf))
			}
			d := startDoor(t, g, tcpdoor.Options{})
			c := dial(t, d.addr)
			if got := readEOF(t, c); got != "" {
				t.Fatalf("got %q", got)
			}
			if n := g.Snapshot().Conns.Refusals()[conntable.RefuseAffinity]; n != 1 {
				t.Errorf("refused for affinity = %d, want 1", n)
			}
			if _, opened, _ := aff.counts(); opened != 0 {
				t.Errorf("Opened called %d times for a refused connection", opened)
			}
		})
	}
}
