package balancer_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestPutGroupCreatesStartsAndReplaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})

	st, created, err := e.b.PutGroup(protocol.Group{Name: "zeta", FrontDoor: "127.0.0.1:0"})
	if err != nil || !created {
		t.Fatalf("PutGroup = created %v, %v; want a new group", created, err)
	}
	if st.Source != protocol.SourceAPI || st.Warning != "" {
		t.Errorf("source %q warning %q, want api and none", st.Source, st.Warning)
	}
	if st.Binding != protocol.OnDemand || st.Strategy != strategy.LeastLoadedName || st.ReportInterval != registry.DefaultReportInterval {
		t.Errorf("defaults: binding %q strategy %q report_interval %s", st.Binding, st.Strategy, st.ReportInterval)
	}
	if st.Params["dampening"] != 0.5 {
		t.Errorf("params %v not completed with least-loaded's defaults", st.Params)
	}
	if st.Listening == "" || st.Advertise != "http://"+st.Listening {
		t.Fatalf("listening %q advertise %q: want the bound address, advertised", st.Listening, st.Advertise)
	}
	if st.Replicas == nil || len(st.Replicas) != 0 {
		t.Errorf("replicas %v, want an empty list", st.Replicas)
	}

	// The front door serves at once: with no replica, 503 naming the group.
	c := httpClient(t)
	a := get(t, c, st.Advertise+"/x")
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, `"zeta"`) {
		t.Fatalf("empty group's front door: %d %s; want 503 naming the group", a.status, a.body)
	}

	// Replacing keeps the listener and applies the new settings.
	st2, created, err := e.b.PutGroup(protocol.Group{Name: "zeta", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName})
	if err != nil || created {
		t.Fatalf("second PutGroup = created %v, %v; want a replaced group", created, err)
	}
	if st2.Listening != st.Listening || st2.Binding != protocol.PerRequest || st2.Strategy != strategy.RoundRobinName {
		t.Errorf("replaced group: listening %q binding %q strategy %q", st2.Listening, st2.Binding, st2.Strategy)
	}
	if len(st2.Params) != 0 {
		t.Errorf("round-robin params %v, want none", st2.Params)
	}

	e.mustPutGroup(protocol.Group{Name: "alpha"})
	var names []string
	for _, g := range e.b.Groups() {
		names = append(names, g.Name)
	}
	if !reflect.DeepEqual(names, []string{"alpha", "zeta"}) {
		t.Errorf("Groups() = %v, want [alpha zeta]", names)
	}
	if _, err := e.b.Group("nope"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Group(nope) = %v, want ErrUnknownGroup", err)
	}
	if !e.b.Ready() {
		t.Error("Ready() = false with every front door serving")
	}
}

func TestPutGroupRejectsInvalidSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	tests := []struct {
		name  string
		group protocol.Group
		field string
	}{
		{"name", protocol.Group{Name: "Bad_Name"}, "name"},
		{"binding", protocol.Group{Name: "g", Binding: "sometimes"}, "binding"},
		{"strategy", protocol.Group{Name: "g", Strategy: "magic"}, "strategy"},
		{"param range", protocol.Group{Name: "g", Params: map[string]any{"dampening": 1.5}}, "params.dampening"},
		{"unknown param", protocol.Group{Name: "g", Strategy: strategy.RoundRobinName, Params: map[string]any{"dampening": 0.5}}, "params.dampening"},
		{"report interval", protocol.Group{Name: "g", ReportInterval: ms(1)}, "report_interval"},
		{"front door", protocol.Group{Name: "g", FrontDoor: "nowhere"}, "front_door"},
		{"static replica", protocol.Group{Name: "g", Replicas: []protocol.StaticReplica{{Address: "127.0.0.1:9"}}}, "replicas[0].address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs := tt.group
			if gs.FrontDoor == "" {
				gs.FrontDoor = "127.0.0.1:0"
			}
			_, _, err := e.b.PutGroup(gs)
			var fe *protocol.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("PutGroup = %v, want a *protocol.FieldError for %q", err, tt.field)
			}
			if _, err := e.b.Group(gs.Name); !errors.Is(err, balancer.ErrUnknownGroup) {
				t.Errorf("an invalid group was created (Group: %v)", err)
			}
		})
	}
}

func TestPutGroupFrontDoorInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, _, err = e.b.PutGroup(protocol.Group{Name: "busy", FrontDoor: ln.Addr().String()})
	if !errors.Is(err, balancer.ErrFrontDoor) {
		t.Fatalf("PutGroup on a busy port = %v, want ErrFrontDoor", err)
	}
	if _, err := e.b.Group("busy"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("a group whose front door failed exists (Group: %v)", err)
	}
}

func TestDeleteGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(protocol.Group{Name: "doomed", ReportInterval: ms(20)})
	reg := e.mustRegister("doomed", "http://127.0.0.1:9/")
	events := e.subscribe("doomed")

	// A kept-alive connection to the front door, to see it closed.
	conn, err := net.Dial("tcp", st.Listening)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "GET /x HTTP/1.1\r\nHost: fd\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("front door answered %s, want 307", resp.Status)
	}

	if err := e.b.DeleteGroup("doomed"); err != nil {
		t.Fatalf("DeleteGroup: %v", err)
	}
	waitClosed(t, events, 5*time.Second)
	if _, err := e.b.Group("doomed"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Group after DeleteGroup = %v, want ErrUnknownGroup", err)
	}
	if _, err := e.b.Report(reg.Token, protocol.Report{Load: 1}); !errors.Is(err, balancer.ErrUnknownToken) {
		t.Errorf("Report with a deleted group's token = %v, want ErrUnknownToken", err)
	}
	if err := e.b.DeleteGroup("doomed"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("second DeleteGroup = %v, want ErrUnknownGroup", err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("kept-alive front door connection after DeleteGroup: read %v, want EOF (closed)", err)
	}
}

// paramsJSON is params in their JSON form, to compare numbers whatever
// their Go type.
func paramsJSON(t *testing.T, p map[string]any) string {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func defaultsJSON(t *testing.T, name string, over map[string]any) string {
	t.Helper()
	d, ok := strategy.Lookup(name)
	if !ok {
		t.Fatalf("no strategy %s", name)
	}
	p := d.Defaults()
	for k, v := range over {
		p[k] = v
	}
	return paramsJSON(t, p)
}

func TestPatchGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "p", Params: map[string]any{"dampening": 0.3}})
	str := func(s string) *string { return &s }
	ll, p2 := strategy.LeastLoadedName, strategy.PowerOfTwoName

	steps := []struct {
		name     string
		patch    protocol.GroupPatch
		strategy string
		params   string
	}{
		{"params are merged", protocol.GroupPatch{Params: map[string]any{"tolerance": 1.2}},
			ll, defaultsJSON(t, ll, map[string]any{"dampening": 0.3, "tolerance": 1.2})},
		{"naming the same strategy keeps params", protocol.GroupPatch{Strategy: &ll},
			ll, defaultsJSON(t, ll, map[string]any{"dampening": 0.3, "tolerance": 1.2})},
		{"a new strategy starts from its defaults", protocol.GroupPatch{Strategy: &p2},
			p2, defaultsJSON(t, p2, nil)},
		{"switching back does not restore old params", protocol.GroupPatch{Strategy: &ll},
			ll, defaultsJSON(t, ll, nil)},
		{"a new strategy with params", protocol.GroupPatch{Strategy: &p2, Params: map[string]any{"bias": 2.0}},
			p2, defaultsJSON(t, p2, map[string]any{"bias": 2.0})},
		{"binding only", protocol.GroupPatch{Binding: str(protocol.PerSession)},
			p2, defaultsJSON(t, p2, map[string]any{"bias": 2.0})},
	}
	for _, s := range steps {
		st, err := e.b.PatchGroup("p", s.patch)
		if err != nil {
			t.Fatalf("%s: PatchGroup: %v", s.name, err)
		}
		for _, got := range []protocol.GroupStatus{st, e.mustGroup("p")} {
			if got.Strategy != s.strategy || paramsJSON(t, got.Params) != s.params {
				t.Fatalf("%s: strategy %s params %s; want %s %s", s.name, got.Strategy, paramsJSON(t, got.Params), s.strategy, s.params)
			}
		}
		if st.Warning != "" {
			t.Errorf("%s: warning %q on a group created through the API", s.name, st.Warning)
		}
	}
	if got := e.mustGroup("p").Binding; got != protocol.PerSession {
		t.Errorf("binding %q after patch, want per-session", got)
	}

	rejects := []struct {
		name  string
		patch protocol.GroupPatch
		field string
	}{
		{"param out of range", protocol.GroupPatch{Params: map[string]any{"bias": 99.0}}, "params.bias"},
		{"param of another strategy", protocol.GroupPatch{Params: map[string]any{"dampening": 0.5}}, "params.dampening"},
		{"unknown strategy", protocol.GroupPatch{Strategy: str("magic")}, "strategy"},
		{"bad binding", protocol.GroupPatch{Binding: str("sometimes")}, "binding"},
	}
	before := e.mustGroup("p")
	for _, r := range rejects {
		_, err := e.b.PatchGroup("p", r.patch)
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != r.field {
			t.Errorf("%s: PatchGroup = %v, want a *protocol.FieldError for %q", r.name, err, r.field)
		}
	}
	after := e.mustGroup("p")
	if after.Strategy != before.Strategy || paramsJSON(t, after.Params) != paramsJSON(t, before.Params) || after.Binding != before.Binding {
		t.Errorf("rejected patches changed the group: %s %s %s", after.Strategy, paramsJSON(t, after.Params), after.Binding)
	}
	if _, err := e.b.PatchGroup("nope", protocol.GroupPatch{}); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("PatchGroup(nope) = %v, want ErrUnknownGroup", err)
	}
}

// TestPatchBindingKeepsCallInFlight switches a per-request group to
// on-demand while a proxied call is in flight: the call finishes, and the
// next front door request is already answered with a binding redirect.
func TestPatchBindingKeepsCallInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	slow := newReplica(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
			io.WriteString(w, "slow answer")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(unblock) // before slow.Close, which waits for the handler

	st := e.mustPutGroup(protocol.Group{Name: "switch", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName})
	reg := e.mustRegister("switch", slow.URL)
	c := httpClient(t)

	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Get(st.Advertise + "/slow")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- result{a: answer{status: resp.StatusCode, body: string(body)}, err: err}
	}()
	recv(t, entered, 5*time.Second, "the proxied call reaching the replica")

	binding := protocol.OnDemand
	if _, err := e.b.PatchGroup("switch", protocol.GroupPatch{Binding: &binding}); err != nil {
		t.Fatalf("PatchGroup: %v", err)
	}
	a := get(t, c, st.Advertise+"/next?q=1")
	if a.status != http.StatusTemporaryRedirect || a.header.Get(protocol.HeaderReplica) != reg.ID ||
		a.header.Get("Location") != slow.URL+"/next?q=1" || a.header.Get(protocol.HeaderGroup) != "switch" {
		t.Fatalf("first request after the switch: %d Location %q replica %q group %q; want a 307 binding to %s",
			a.status, a.header.Get("Location"), a.header.Get(protocol.HeaderReplica), a.header.Get(protocol.HeaderGroup), reg.ID)
	}

	unblock()
	if r := recv(t, done, 10*time.Second, "the call in flight to finish"); r.err != nil || r.a.status != http.StatusOK || r.a.body != "slow answer" {
		t.Fatalf("call in flight during the switch: %d %q %v; want 200 with the replica's answer", r.a.status, r.a.body, r.err)
	}
	if got := e.mustGroup("switch").Listening; got != st.Listening {
		t.Errorf("front door moved from %s to %s on a binding switch", st.Listening, got)
	}

	// And back: proxied again.
	binding = protocol.PerRequest
	if _, err := e.b.PatchGroup("switch", protocol.GroupPatch{Binding: &binding}); err != nil {
		t.Fatalf("PatchGroup: %v", err)
	}
	if a := get(t, c, st.Advertise+"/again"); a.status != http.StatusOK || a.body != "slow answer" {
		t.Fatalf("after switching back to per-request: %d %q, want the proxied answer", a.status, a.body)
	}
}

// TestFrontDoorMoves: a new front_door rebinds the listener; one that
// cannot listen is refused and changes nothing.
func TestFrontDoorMoves(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(protocol.Group{Name: "mv"})
	reg := e.mustRegister("mv", "http://127.0.0.1:9001")
	c := httpClient(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, _, err := e.b.PutGroup(protocol.Group{Name: "mv", FrontDoor: ln.Addr().String()}); !errors.Is(err, balancer.ErrFrontDoor) {
		t.Fatalf("moving the front door to a busy port: %v, want ErrFrontDoor", err)
	}
	got := e.mustGroup("mv")
	if got.FrontDoor != st.FrontDoor || got.Listening != st.Listening || got.Advertise != st.Advertise {
		t.Errorf("after a refused move: front_door %s listening %s advertise %s; want %s %s %s unchanged",
			got.FrontDoor, got.Listening, got.Advertise, st.FrontDoor, st.Listening, st.Advertise)
	}
	if again := e.mustRegisterWith("mv", protocol.Registration{Address: "http://127.0.0.1:9001", Replace: true}); again.FrontDoor != st.Advertise {
		t.Errorf("registration answers front_door %s after a refused move, want %s", again.FrontDoor, st.Advertise)
	}
	if a := get(t, c, st.Advertise+"/x"); a.header.Get(protocol.HeaderReplica) != reg.ID {
		t.Fatalf("front door after a refused move: %d %s", a.status, a.body)
	}

	moved := e.mustPutGroup(protocol.Group{Name: "mv", FrontDoor: "localhost:0"})
	if moved.Listening == st.Listening || moved.Listening == "" {
		t.Fatalf("after moving the front door: listening %q (was %s)", moved.Listening, st.Listening)
	}
	if a := get(t, c, moved.Advertise+"/x"); a.header.Get(protocol.HeaderReplica) != reg.ID {
		t.Fatalf("moved front door at %s: %d %s", moved.Advertise, a.status, a.body)
	}
}
