package balancer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// sseMsg is one event of GET /v1/events, its SSE fields and decoded data.
type sseMsg struct {
	id, event string
	ev        struct {
		ID       string          `json:"id"`
		Type     string          `json:"type"`
		Group    string          `json:"group"`
		Instance string          `json:"instance"`
		Data     json.RawMessage `json:"data"`
	}
}

// stepData is the data of a step event, as far as these tests read it.
type stepData struct {
	Replicas []struct {
		ID       string `json:"id"`
		Advisory string `json:"advisory"`
		Epoch    uint64 `json:"epoch"`
	} `json:"replicas"`
	Moves []protocol.PlannedMove `json:"moves"`
}

// advises reports whether a step event advises replica id high and plans
// client's move from id to to.
func (m sseMsg) advises(t *testing.T, id, client, to string) bool {
	t.Helper()
	if m.ev.Type != "step" {
		return false
	}
	var d stepData
	if err := json.Unmarshal(m.ev.Data, &d); err != nil {
		t.Fatalf("step event %s: %v", m.ev.Data, err)
	}
	high := slices.ContainsFunc(d.Replicas, func(r struct {
		ID       string `json:"id"`
		Advisory string `json:"advisory"`
		Epoch    uint64 `json:"epoch"`
	}) bool {
		return r.ID == id && r.Advisory == protocol.High && r.Epoch > 0
	})
	return high && slices.Contains(d.Moves, protocol.PlannedMove{Client: client, From: id, To: to, Rate: 40})
}

// openEvents follows base's GET /v1/events (with Last-Event-ID lastID
// unless "") until ctx ends; heartbeats are skipped.
func openEvents(t *testing.T, ctx context.Context, base, lastID string) <-chan sseMsg {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s/v1/events: %s", base, resp.Status)
	}
	out := make(chan sseMsg, 256)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var m sseMsg
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				m.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				if json.Unmarshal([]byte(line[6:]), &m.ev) != nil {
					return
				}
			case line == "" && m.event != "":
				select {
				case out <- m:
				case <-ctx.Done():
					return
				}
				m = sseMsg{}
			}
		}
	}()
	return out
}

// nextEvent returns the next event of ch, failing at ctx's end.
func nextEvent(t *testing.T, ctx context.Context, ch <-chan sseMsg, what string) sseMsg {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return m
	case <-ctx.Done():
		t.Fatalf("%s: not before the deadline", what)
	}
	return sseMsg{}
}

// TestClusterLeaderEventsEverywhere: the group's analyzer leader's
// advisories and planned moves reach a follower's GET /v1/events through
// the load push, as a step marked with the leader's instance and numbered
// by the follower ("<follower>-<seq>"); the follower's own steps show the
// same advice; a move completed at one follower's front door shows at the
// other follower as a binding marked with the first, and not twice at the
// first; the leader's stream has its own ids and relays nothing; and an
// id of one instance given to another gets a status first.
func TestClusterLeaderEventsEverywhere(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	c := newTestCluster(t, etcd)
	nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b"), c.start("fulcrum-c")}
	_, _, err := nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval),
		Binding: protocol.OnDemand, Strategy: "least-loaded"})
	if err != nil {
		t.Fatal(err)
	}
	lead, _ := c.leaderNode(0)
	var followers []*clusterNode
	for _, n := range nodes {
		if n != lead {
			followers = append(followers, n)
		}
	}
	other, third := followers[0], followers[1]
	busy, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:9/"})
	if err != nil {
		t.Fatal(err)
	}
	idle, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:10/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	until(t, 5*time.Second, "both replicas in the other instance's snapshot", func() bool {
		return len(other.b.EligibleIDs(clusterGroup)) == 2
	})
	leadEvents := openEvents(t, ctx, lead.url, "")
	otherEvents := openEvents(t, ctx, other.url, "")
	thirdEvents := openEvents(t, ctx, third.url, "")

	// The leader hears the reports and plans c2's move off the busy
	// replica (least-loaded moves the client that evens the loads).
	until(t, 10*time.Second, "a high advisory naming c2 from the warm leader", func() bool {
		if code, _, body := reportJSON(t, lead.url, idle.Token, `{"load": 10, "clients": [{"id": "c3", "rate": 10}]}`); code != http.StatusOK {
			t.Fatalf("report of the idle replica at the leader: %d %s", code, body)
		}
		code, _, body := reportJSON(t, lead.url, busy.Token, `{"load": 100, "clients": [{"id": "c1", "rate": 60}, {"id": "c2", "rate": 40}]}`)
		var adv protocol.Advisory
		if code != http.StatusOK || json.Unmarshal(body, &adv) != nil {
			t.Fatalf("report of the busy replica at the leader: %d %s", code, body)
		}
		return adv.Advisory == protocol.High && slices.Equal(adv.Clients, []string{"c2"})
	})

	idOf := func(n *clusterNode) *regexp.Regexp {
		return regexp.MustCompile(`^` + regexp.QuoteMeta(n.name) + `-[0-9]+$`)
	}
	// Every event of a stream has its instance's id, the same in the SSE
	// id and the data.
	read := func(n *clusterNode, ch <-chan sseMsg, what string) sseMsg {
		t.Helper()
		m := nextEvent(t, ctx, ch, what)
		if !idOf(n).MatchString(m.id) || m.ev.ID != m.id {
			t.Fatalf("%s: %s event with SSE id %q, data id %q; want both %s-<seq>", what, m.event, m.id, m.ev.ID, n.name)
		}
		return m
	}

	// The follower relays the leader's step, marked with the leader.
	var relayed sseMsg
	for relayed = read(other, otherEvents, "the leader's step at "+other.name); !relayed.advises(t, busy.ID, "c2", idle.ID) || relayed.ev.Instance != lead.name; relayed = read(other, otherEvents, "the leader's step at "+other.name) {
		if relayed.ev.Instance != "" && relayed.ev.Instance != lead.name {
			t.Fatalf("event %s %s marked with instance %q, want %q or none", relayed.id, relayed.event, relayed.ev.Instance, lead.name)
		}
	}
	// Its own steps show the same advice and moves, unmarked.
	for m := read(other, otherEvents, "the follower's own step"); m.ev.Instance != "" || !m.advises(t, busy.ID, "c2", idle.ID); m = read(other, otherEvents, "the follower's own step") {
	}

	// The leader's stream: its own ids, its own step with the move, and no
	// event relayed from anyone.
	for m := read(lead, leadEvents, "the leader's own step"); !m.advises(t, busy.ID, "c2", idle.ID); m = read(lead, leadEvents, "the leader's own step") {
		if m.ev.Instance != "" {
			t.Fatalf("the leader's stream relays %s %s from %q", m.id, m.event, m.ev.Instance)
		}
	}

	// c2, sent back by its replica, rebinds at the other instance's front
	// door by its move in etcd; that instance tells the leader, whose
	// next push tells the third.
	fd := other.b.FrontDoors()[clusterGroup].Address
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+fd+"/work", nil)
	req.Header.Set(protocol.HeaderClient, "c2")
	req.Header.Set(protocol.HeaderRebind, "1")
	req.Header.Set(protocol.HeaderBinding, clusterGroup+"/"+busy.ID)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get(protocol.HeaderReplica) != idle.ID {
		t.Fatalf("c2's rebind at %s: %d replica %q; want 307 to %s", other.name, resp.StatusCode, resp.Header.Get(protocol.HeaderReplica), idle.ID)
	}
	isBinding := func(m sseMsg) bool {
		var d struct{ Client, Replica string }
		return m.ev.Type == "binding" && json.Unmarshal(m.ev.Data, &d) == nil && d.Client == "c2" && d.Replica == idle.ID
	}
	for m := read(third, thirdEvents, "c2's binding at "+third.name); !isBinding(m) || m.ev.Instance != other.name; m = read(third, thirdEvents, "c2's binding at "+third.name) {
		if isBinding(m) {
			t.Fatalf("%s shows c2's binding as %s's %s, want it marked with %s", third.name, m.ev.Instance, m.id, other.name)
		}
	}
	// At the other instance: its own binding, then the leader's step
	// without c2's move (the push that carried the completion), and no
	// relayed copy of the binding.
	own := 0
	for m := read(other, otherEvents, "the leader's step after c2 bound"); ; m = read(other, otherEvents, "the leader's step after c2 bound") {
		if isBinding(m) {
			if own++; m.ev.Instance != "" || own > 1 {
				t.Fatalf("%s shows c2's binding again (%s, instance %q): it happened there", other.name, m.id, m.ev.Instance)
			}
		}
		var d stepData
		if m.ev.Type == "step" && m.ev.Instance == lead.name && json.Unmarshal(m.ev.Data, &d) == nil &&
			!slices.ContainsFunc(d.Moves, func(mv protocol.PlannedMove) bool { return mv.Client == "c2" }) {
			break
		}
	}
	if own != 1 {
		t.Fatalf("%s showed c2's binding %d times before the leader's step without its move, want once", other.name, own)
	}
	for {
		select {
		case m := <-leadEvents:
			if m.ev.Instance != "" {
				t.Fatalf("the leader's stream relays %s %s from %q", m.id, m.event, m.ev.Instance)
			}
			continue
		default:
		}
		break
	}

	// A client that reconnects with the leader's id to the follower (or
	// the follower's to the leader) starts from a status; with the
	// follower's own id it resumes right after it.
	for _, tc := range []struct {
		at   *clusterNode
		last string
	}{{other, strings.Replace(relayed.id, other.name, lead.name, 1)}, {lead, relayed.id}} {
		m := read(tc.at, openEvents(t, ctx, tc.at.url, tc.last), "resume at "+tc.at.name+" after "+tc.last)
		if m.event != "status" {
			t.Errorf("resume at %s after %s: first event %s %s, want status", tc.at.name, tc.last, m.event, m.id)
		}
	}
	m := read(other, openEvents(t, ctx, other.url, relayed.id), "resume at "+other.name+" after its own "+relayed.id)
	if want := strings.TrimPrefix(relayed.id, other.name+"-"); m.event == "status" || m.id == relayed.id || !strings.HasPrefix(m.id, other.name+"-") || seqAfter(m.id) != seqAfter(relayed.id)+1 {
		t.Errorf("resume at %s after %s (seq %s): first event %s %s, want the next event", other.name, relayed.id, want, m.event, m.id)
	}
}

// seqAfter is the seq of an id "<instance>-<seq>" (its digits after the
// last "-"), -1 when it has none.
func seqAfter(id string) int {
	i := strings.LastIndexByte(id, '-')
	n := 0
	if i < 0 || i == len(id)-1 {
		return -1
	}
	for _, c := range id[i+1:] {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
