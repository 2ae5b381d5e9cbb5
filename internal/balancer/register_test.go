package balancer_test

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

var replicaIDRE = regexp.MustCompile(`^[a-z0-9-]+$`)

func TestRegisterNewThenReplace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{admin: true})
	st := e.mustPutGroup(protocol.Group{Name: "reg", ReportInterval: ms(250)})

	first, created, err := e.b.Register("reg", protocol.Registration{Address: "http://127.0.0.1:9001"})
	if err != nil || !created {
		t.Fatalf("Register = created %v, %v; want a new replica", created, err)
	}
	if !replicaIDRE.MatchString(first.ID) || first.Token == "" {
		t.Errorf("id %q token %q: want an id matching [a-z0-9-]+ and a token", first.ID, first.Token)
	}
	if first.FrontDoor != st.Advertise || first.ReportURL != e.adminURL+"/v1/report" || first.ReportInterval != ms(250) {
		t.Errorf("answer %+v: want front_door %s, report_url %s/v1/report, report_interval 250ms", first, st.Advertise, e.adminURL)
	}
	r := replicaOf(t, e.mustGroup("reg"), first.ID)
	if r.Address != "http://127.0.0.1:9001" || r.State != protocol.StateActive || r.Weight != 1 || r.Monitor != protocol.MonitorPush || r.Load != nil {
		t.Errorf("new replica %+v: want active, weight 1, push, unreported", r)
	}
	if !e.b.ReplicaTokenAllowed("reg", first.ID, first.Token) {
		t.Error("ReplicaTokenAllowed rejects the replica's own token")
	}

	// The same address, written differently, with replace: same id, a
	// fresh token, the old one revoked.
	again, created, err := e.b.Register("reg", protocol.Registration{Address: "HTTP://127.0.0.1:9001/", Weight: 3, Replace: true})
	if err != nil || created {
		t.Fatalf("Register with replace = created %v, %v; want the existing replica", created, err)
	}
	if again.ID != first.ID || again.Token == first.Token {
		t.Fatalf("replace gave id %s token changed %v; want id %s and a new token", again.ID, again.Token != first.Token, first.ID)
	}
	if _, err := e.b.Report(first.Token, protocol.Report{Load: 1}); !errors.Is(err, balancer.ErrUnknownToken) {
		t.Errorf("Report with the revoked token = %v, want ErrUnknownToken", err)
	}
	if e.b.ReplicaTokenAllowed("reg", first.ID, first.Token) {
		t.Error("ReplicaTokenAllowed accepts the revoked token")
	}
	e.mustReport(again.Token, protocol.Report{Load: 1})
	st2 := e.mustGroup("reg")
	if len(st2.Replicas) != 1 || st2.Replicas[0].Weight != 3 {
		t.Errorf("after replace: replicas %+v; want the one replica, weight 3", st2.Replicas)
	}
}

func TestRegisterDuplicateAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "dup"})
	first := e.mustRegister("dup", "http://127.0.0.1:9001/base")

	_, _, err := e.b.Register("dup", protocol.Registration{Address: "http://127.0.0.1:9001/base/"})
	var de *balancer.DuplicateAddressError
	if !errors.As(err, &de) || de.ExistingID != first.ID || de.Group != "dup" {
		t.Fatalf("Register of a registered address = %v, want a *DuplicateAddressError naming %s", err, first.ID)
	}
	if len(e.mustGroup("dup").Replicas) != 1 {
		t.Error("a duplicate registration added a replica")
	}
	if _, err := e.b.Report(first.Token, protocol.Report{Load: 1}); err != nil {
		t.Errorf("the first replica's token stopped working after a refused duplicate: %v", err)
	}
	// Another group may have the same address.
	e.mustPutGroup(protocol.Group{Name: "other"})
	e.mustRegister("other", "http://127.0.0.1:9001/base")
}

func TestRegisterRejects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "v"})
	tests := []struct {
		name  string
		reg   protocol.Registration
		field string
	}{
		{"empty address", protocol.Registration{}, "address"},
		{"not a URL", protocol.Registration{Address: "127.0.0.1:9001"}, "address"},
		{"query", protocol.Registration{Address: "http://127.0.0.1:9001/?q=1"}, "address"},
		{"negative weight", protocol.Registration{Address: "http://127.0.0.1:9001", Weight: -1}, "weight"},
		{"huge weight", protocol.Registration{Address: "http://127.0.0.1:9001", Weight: 2e6}, "weight"},
		{"monitor mode", protocol.Registration{Address: "http://127.0.0.1:9001", Monitor: protocol.MonitorSpec{Mode: "poll"}}, "monitor.mode"},
		{"pull without url", protocol.Registration{Address: "http://127.0.0.1:9001", Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull}}, "monitor.url"},
		{"push with url", protocol.Registration{Address: "http://127.0.0.1:9001", Monitor: protocol.MonitorSpec{URL: "http://127.0.0.1:9001/r"}}, "monitor.url"},
		{"pull interval", protocol.Registration{Address: "http://127.0.0.1:9001", Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: "http://127.0.0.1:9001/r", Interval: ms(1)}}, "monitor.interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := e.b.Register("v", tt.reg)
			var fe *protocol.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Register = %v, want a *protocol.FieldError for %q", err, tt.field)
			}
		})
	}
	if n := len(e.mustGroup("v").Replicas); n != 0 {
		t.Errorf("rejected registrations added %d replicas", n)
	}
	if _, _, err := e.b.Register("nope", protocol.Registration{Address: "http://127.0.0.1:9001"}); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Register in an unknown group = %v, want ErrUnknownGroup", err)
	}
}

func TestJoinTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{joinToken: "global-secret"})
	e.mustPutGroup(protocol.Group{Name: "a", JoinToken: "a-secret"})
	e.mustPutGroup(protocol.Group{Name: "b"})
	tests := []struct {
		group, token string
		want         bool
	}{
		{"a", "a-secret", true},
		{"a", "global-secret", true},
		{"b", "global-secret", true},
		{"b", "a-secret", false},
		{"a", "", false},
		{"a", "wrong", false},
		{"nope", "a-secret", false},
	}
	for _, tt := range tests {
		if got := e.b.JoinAllowed(tt.group, tt.token); got != tt.want {
			t.Errorf("JoinAllowed(%s, %q) = %v, want %v", tt.group, tt.token, got, tt.want)
		}
	}
	reg := e.mustRegister("a", "http://127.0.0.1:9001")
	if e.b.ReplicaTokenAllowed("b", reg.ID, reg.Token) || e.b.ReplicaTokenAllowed("a", "r-other", reg.Token) {
		t.Error("ReplicaTokenAllowed accepts a token for another group or replica")
	}
}

// redirects sends n requests to a front door and returns the replicas the
// redirects name, counted.
func redirects(t *testing.T, c *http.Client, frontDoor string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for i := range n {
		a := get(t, c, fmt.Sprintf("%s/call/%d", frontDoor, i))
		if a.status != http.StatusTemporaryRedirect {
			t.Fatalf("front door answered %d %s, want 307", a.status, a.body)
		}
		seen[a.header.Get(protocol.HeaderReplica)]++
	}
	return seen
}

func TestDrainAndActivate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDrainAndActivate)
}

func testDrainAndActivate(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	st := e.mustPutGroup(protocol.Group{Name: "d", Strategy: strategy.RoundRobinName, ReportInterval: ms(20)})
	a := e.mustRegister("d", "http://127.0.0.1:9001")
	b := e.mustRegister("d", "http://127.0.0.1:9002")
	c := memClient(t, n)

	before := e.mustReport(b.Token, protocol.Report{Load: 1})
	if err := e.b.Drain("d", b.ID); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if got := replicaOf(t, e.mustGroup("d"), b.ID).State; got != protocol.StateDraining {
		t.Errorf("drained replica is %s, want draining", got)
	}
	if got := e.b.EligibleIDs("d"); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("eligible after drain = %v, want [%s]", got, a.ID)
	}
	adv := e.mustReport(b.Token, protocol.Report{Load: 1})
	if adv.Advisory != protocol.Drain || adv.Epoch == before.Epoch {
		t.Errorf("drained replica's advisory %+v, want drain with a new epoch", adv)
	}
	if seen := redirects(t, c, st.Advertise, 20); seen[b.ID] != 0 || seen[a.ID] != 20 {
		t.Errorf("redirects while %s drains: %v; want all to %s", b.ID, seen, a.ID)
	}

	if err := e.b.Activate("d", b.ID); err != nil {
		t.Fatalf("Activate: %v", err)
	}
	if got := replicaOf(t, e.mustGroup("d"), b.ID).State; got != protocol.StateActive {
		t.Errorf("activated replica is %s, want active", got)
	}
	if adv2 := e.mustReport(b.Token, protocol.Report{Load: 1}); adv2.Advisory != protocol.Nominal || adv2.Epoch == adv.Epoch {
		t.Errorf("activated replica's advisory %+v, want nominal with a new epoch", adv2)
	}
	if seen := redirects(t, c, st.Advertise, 20); seen[b.ID] == 0 || seen[a.ID] == 0 {
		t.Errorf("redirects after activate: %v; want both replicas (round-robin)", seen)
	}

	for _, err := range []error{e.b.Drain("d", "r-none"), e.b.Activate("d", "r-none"), e.b.RemoveReplica("d", "r-none")} {
		if !errors.Is(err, balancer.ErrUnknownReplica) {
			t.Errorf("unknown replica: %v, want ErrUnknownReplica", err)
		}
	}
	if err := e.b.Drain("nope", b.ID); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Drain in an unknown group = %v, want ErrUnknownGroup", err)
	}
}

// TestRemoveReplicaWhenIdle removes a busy replica: it drains while it
// reports calls, and goes (with its token) at the first step after it
// reports idle. The balancer's clock stands still, so reports never go
// stale and the drain never times out.
// In a synctest bubble (bubble_test.go).
func TestRemoveReplicaWhenIdle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testRemoveReplicaWhenIdle)
}

func testRemoveReplicaWhenIdle(t *testing.T) {
	n := memnet.New()
	clock := newFakeClock()
	e := newEnv(t, envOptions{net: n, clock: clock})
	e.mustPutGroup(protocol.Group{Name: "rm", ReportInterval: ms(20)})
	a := e.mustRegister("rm", "http://127.0.0.1:9001")
	b := e.mustRegister("rm", "http://127.0.0.1:9002")
	events := e.subscribe("rm")

	busy := protocol.Report{Load: 10, Metrics: map[string]float64{protocol.MetricRPS: 10, protocol.MetricInflight: 2}}
	e.mustReport(a.Token, busy)
	waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(r map[string]stepReplica) error {
		if r[a.ID].Load == nil {
			return fmt.Errorf("%s unreported", a.ID)
		}
		return nil
	}))

	if err := e.b.RemoveReplica("rm", a.ID); err != nil {
		t.Fatalf("RemoveReplica: %v", err)
	}
	if got := replicaOf(t, e.mustGroup("rm"), a.ID).State; got != protocol.StateDraining {
		t.Errorf("replica being removed is %s, want draining", got)
	}
	if got := e.b.EligibleIDs("rm"); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("eligible while %s is removed = %v, want [%s]", a.ID, got, b.ID)
	}
	// Still busy: it survives steps, and its token still works so that it
	// learns it must drain.
	if adv := e.mustReport(a.Token, busy); adv.Advisory != protocol.Drain {
		t.Errorf("advisory of a replica being removed: %+v, want drain", adv)
	}
	for range 3 {
		waitEvent(t, events, 5*time.Second, stepAfter(clock.Now(), func(r map[string]stepReplica) error {
			if got, ok := r[a.ID]; !ok || got.State != protocol.StateDraining {
				return fmt.Errorf("%s in step: %+v, want present and draining", a.ID, got)
			}
			return nil
		}))
	}

	e.mustReport(a.Token, protocol.Report{Load: 0, Metrics: map[string]float64{protocol.MetricRPS: 0, protocol.MetricInflight: 0}})
	waitEvent(t, events, 5*time.Second, membership(func(r map[string]memberEntry) error {
		if _, ok := r[a.ID]; ok {
			return fmt.Errorf("%s still a member", a.ID)
		}
		if _, ok := r[b.ID]; !ok {
			return fmt.Errorf("%s gone too", b.ID)
		}
		return nil
	}))
	if ids := replicaIDs(e.mustGroup("rm")); !slices.Equal(ids, []string{b.ID}) {
		t.Errorf("replicas after removal = %v, want [%s]", ids, b.ID)
	}
	if _, err := e.b.Report(a.Token, busy); !errors.Is(err, balancer.ErrUnknownToken) {
		t.Errorf("Report of a removed replica = %v, want ErrUnknownToken", err)
	}
	if e.b.ReplicaTokenAllowed("rm", a.ID, a.Token) {
		t.Error("ReplicaTokenAllowed accepts a removed replica's token")
	}

	// A replica that never reported is idle: it goes at the next step.
	if err := e.b.RemoveReplica("rm", b.ID); err != nil {
		t.Fatalf("RemoveReplica: %v", err)
	}
	eventually(t, 5*time.Second, func() error {
		if ids := replicaIDs(e.mustGroup("rm")); len(ids) != 0 {
			return fmt.Errorf("replicas %v, want none", ids)
		}
		return nil
	})

	// Gone from the store too.
	e2 := e.reopen(envOptions{net: n, clock: clock, noStart: true})
	if ids := replicaIDs(e2.mustGroup("rm")); len(ids) != 0 {
		t.Errorf("removed replicas back after a restart: %v", ids)
	}
}
