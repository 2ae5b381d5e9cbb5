//go:build linux

package omniorb

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// referenceForm is one way a reference lists two front doors.
type referenceForm string

const (
	formAlternates referenceForm = "IOR with TAG_ALTERNATE_IIOP_ADDRESS"
	formProfiles   referenceForm = "IOR with two IIOP profiles"
	formCorbaloc   referenceForm = "multi-address corbaloc"
)

// groupReference returns the group's reference listing both front doors
// (the first one first) in form f: typed like the group's own IOR.
func groupReference(t *testing.T, f referenceForm, typeID string, doors []ior.Address) string {
	t.Helper()
	switch f {
	case formCorbaloc:
		return ior.Corbaloc{Addresses: doors, Key: []byte(groupName)}.String()
	case formProfiles:
		ref, err := ior.MultiAddress(typeID, []byte(groupName), doors, ior.FormProfiles)
		if err != nil {
			t.Fatal(err)
		}
		return ref.String()
	}
	ref, err := ior.MultiAddress(typeID, []byte(groupName), doors, ior.FormAlternates)
	if err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// frontDoorAddress is a balancer's GIOP front door as an IIOP 1.2 address.
func frontDoorAddress(t *testing.T, g groupStatus) ior.Address {
	t.Helper()
	host, port, err := net.SplitHostPort(g.Listening)
	if err != nil {
		t.Fatalf("group %s listening on %q: %v", g.Name, g.Listening, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatalf("group %s listening on %q: %v", g.Name, g.Listening, err)
	}
	return ior.Address{Version: ior.V12, Host: host, Port: uint16(n)}
}

// proxiedBy sums the calls balancer b's front door proxied.
func proxiedBy(ctx context.Context, t *testing.T, b *balancer) uint64 {
	t.Helper()
	var n uint64
	for _, rep := range b.group(ctx, t, groupName).Replicas {
		n += rep.Counters.Proxied
	}
	return n
}

// failoverCall is a client's --per-call line with omniORB's minor code.
type failoverCall struct {
	Call  int    `json:"call"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Minor string `json:"minor"`
}

// omniORB's minor codes of the failures measured below (omniORB4/minorCode.h).
const (
	minorWaitingForReply = "0x41540007" // COMM_FAILURE_WaitingForReply
	minorConnectFailed   = "0x41540002" // TRANSIENT_ConnectFailed
)

// outcome is what a call after the kill did: "ok", or the exception and
// its minor code.
func outcome(c failoverCall) string {
	if c.OK {
		return "ok"
	}
	return c.Error + " " + c.Minor
}

// Two single-node balancers with the same per-request GIOP group of the
// same omniORB replicas stand for two instances of one cluster. A client
// holds a reference listing both front doors, the first first; the first
// balancer is killed with kill -9 while the client is idle, and the client
// makes three calls. What they do is omniORB's choice, the same in omniORB
// C++ (Debian's 4.2) and omniORBpy (4.3), measured here per reference form
// and recorded in docs/cluster.md ("GIOP clients across instances"):
//
//   - The first call goes out on the connection to the dead balancer,
//     which omniORB had not noticed closed, and fails with COMM_FAILURE
//     (WaitingForReply, COMPLETED_MAYBE); omniORB does not retry it, since
//     it may have run. This is so for every form.
//   - An IOR with TAG_ALTERNATE_IIOP_ADDRESS, and a multi-address corbaloc
//     URL (which omniORB turns into one profile with alternate addresses):
//     omniORB then connects to the next address; the next calls succeed
//     through the second balancer.
//   - An IOR with two IIOP profiles: omniORB uses the first profile only;
//     the next calls fail with TRANSIENT (ConnectFailed) and never reach
//     the second balancer.
//
// A client started after the kill makes its first call the way the second
// call above went: through the second balancer, or TRANSIENT.
func TestGIOPFailoverAcrossInstances(t *testing.T) {
	o := needORBs(t)
	kinds := []clientKind{cxxClient}
	if o.python != "" {
		kinds = append(kinds, pyClient)
	} else {
		defer needPython(t) // fails on CI, skips the Python part otherwise
	}
	ctx := testContext(t, 3*time.Minute)
	servers := []*server{o.startServer(ctx, t, "replica 0", 0), o.startServer(ctx, t, "replica 1", 0)}

	failsOver := []string{"COMM_FAILURE " + minorWaitingForReply, "ok", "ok"}
	for _, tc := range []struct {
		form referenceForm
		want []string // the outcomes of the three calls after the kill
	}{
		{formAlternates, failsOver},
		{formCorbaloc, failsOver},
		{formProfiles, []string{"COMM_FAILURE " + minorWaitingForReply, "TRANSIENT " + minorConnectFailed, "TRANSIENT " + minorConnectFailed}},
	} {
		t.Run(string(tc.form), func(t *testing.T) {
			var bals []*balancer
			var doors []ior.Address
			typeID := ""
			for range 2 {
				b := startBalancer(ctx, t, groupYAML(t, rigOpts{binding: "per-request", frontDoor: "127.0.0.1:0"}))
				for _, s := range servers {
					b.register(ctx, t, groupName, s.ior)
				}
				g := waitActiveOn(ctx, t, b, len(servers))
				ref, err := ior.ParseStringified(g.Reference.IOR)
				if err != nil {
					t.Fatalf("the group's IOR: %v", err)
				}
				typeID = ref.TypeID
				bals = append(bals, b)
				doors = append(doors, frontDoorAddress(t, g))
			}
			ref := groupReference(t, tc.form, typeID, doors)
			t.Logf("reference: %s", ref)

			var clients []*liveClient
			for i, k := range kinds {
				c := o.startLiveClient(t, k, "--arg", fmt.Sprint(5_000_000+i), "--per-call", ref)
				if s := c.batch(ctx, t, 3); s.OK != 3 {
					t.Fatalf("%s: first calls %+v, want 3 ok", k, s)
				}
				clients = append(clients, c)
			}
			// (A client resolving a corbaloc URL also asks _is_a.)
			if n := proxiedBy(ctx, t, bals[1]); n != 0 {
				t.Fatalf("the second balancer proxied %d calls while the first was up, want 0", n)
			}
			if n, want := proxiedBy(ctx, t, bals[0]), uint64(3*len(clients)); n < want {
				t.Fatalf("the first balancer proxied %d calls, want at least %d", n, want)
			}

			bals[0].Kill9(ctx, t)
			for _, c := range clients {
				c.startBatch(t, 3)
			}
			ok := 0
			for _, c := range clients {
				s := c.waitBatch(ctx, t)
				calls := jsonLines[failoverCall](t, c.Stdout.String(), func(l string) bool { return strings.HasPrefix(l, `{"call"`) })
				if len(calls) != 6 {
					t.Fatalf("%s: %d call lines, want 6:\n%s", c.kind, len(calls), c.Stdout)
				}
				var got []string
				for _, call := range calls[3:] {
					got = append(got, outcome(call))
				}
				t.Logf("%s holding an %s, after the first balancer's kill -9: %v", c.kind, tc.form, got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s holding an %s: the calls after the first balancer died: %v, want %v", c.kind, tc.form, got, tc.want)
				}
				ok += s.OK
			}

			// A client that starts after the kill has no connection to
			// lose: its first call is the second outcome above.
			for i, k := range kinds {
				c := o.startLiveClient(t, k, "--arg", fmt.Sprint(6_000_000+i), "--per-call", ref)
				s := c.batch(ctx, t, 1)
				calls := jsonLines[failoverCall](t, c.Stdout.String(), func(l string) bool { return strings.HasPrefix(l, `{"call"`) })
				if len(calls) != 1 || outcome(calls[0]) != tc.want[1] {
					t.Errorf("%s started after the kill holding an %s: first call %+v, want %s", k, tc.form, calls, tc.want[1])
				}
				ok += s.OK
			}
			proxiedEventually(ctx, t, bals[1], uint64(ok))
		})
	}
}

// waitActiveOn waits until b's group has n active replicas.
func waitActiveOn(ctx context.Context, t *testing.T, b *balancer, n int) groupStatus {
	t.Helper()
	var g groupStatus
	proctest.Poll(ctx, t, fmt.Sprintf("%d active replicas in group %s", n, groupName), func() (bool, string) {
		g = b.group(ctx, t, groupName)
		active := 0
		for _, rep := range g.Replicas {
			if rep.State == "active" {
				active++
			}
		}
		return active == n, fmt.Sprintf("%+v", g.Replicas)
	})
	return g
}

// proxiedEventually waits until b's front door has proxied at least n
// calls (its counters are updated after the reply is sent; a client that
// resolves a corbaloc URL also calls _is_a); with n == 0 it checks that b
// proxied none.
func proxiedEventually(ctx context.Context, t *testing.T, b *balancer, n uint64) {
	t.Helper()
	if n == 0 {
		if got := proxiedBy(ctx, t, b); got != 0 {
			t.Errorf("the second balancer proxied %d calls, want none", got)
		}
		return
	}
	proctest.Poll(ctx, t, fmt.Sprintf("%d calls proxied by the second balancer", n), func() (bool, string) {
		got := proxiedBy(ctx, t, b)
		return got >= n, fmt.Sprint(got)
	})
}
