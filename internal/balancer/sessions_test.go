package balancer_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestSessionTableInAPI fills a group's session table by hand (the front
// door's part) and reads it back through Balancer.Sessions and the real
// admin API's GET /v1/groups/{name}/sessions, page by page, and its
// counters on /metrics.
func TestSessionTableInAPI(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	e := newEnv(t, envOptions{clock: clk, admin: true})
	e.mustPutGroup(protocol.Group{Name: "o", Binding: protocol.PerRequest, Affinity: []protocol.AffinityRule{
		{Kind: protocol.AffinityClientActivated, Match: "/objects/{id}", Timeout: protocol.Duration(time.Minute), MaxEntries: 2},
		{Kind: protocol.AffinitySingleton, Match: "/counters/{name}"},
	}})
	tab := e.b.SessionTable("o")
	if tab == nil {
		t.Fatal("group o with affinity rules has no session table")
	}
	t0 := clk.Now()
	tab.Create(0, "b", "r1", t0)
	tab.Create(0, "a", "r2", t0.Add(time.Second))
	tab.Create(0, "c", "r1", t0.Add(2*time.Second)) // evicts b, the least recently used
	clk.Advance(3 * time.Second)

	if l, err := e.b.Sessions("o", "", 0); err != nil || len(l.Sessions) != 1 || l.Next != "0/a" || l.Total != 2 {
		t.Errorf("Sessions(limit 0) = %+v, %v; want one entry, next 0/a, total 2", l, err)
	}
	if _, err := e.b.Sessions("nope", "", 10); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Sessions(nope): %v, want ErrUnknownGroup", err)
	}

	c := adminClient(t)
	page := func(q string) protocol.SessionList {
		t.Helper()
		a := get(t, c, e.adminURL+"/v1/groups/o/sessions"+q)
		if a.status != http.StatusOK {
			t.Fatalf("sessions%s: %d %s", q, a.status, a.body)
		}
		var l protocol.SessionList
		if err := json.Unmarshal([]byte(a.body), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := page("?limit=1")
	if first.Total != 2 || len(first.Sessions) != 1 || first.Next != "0/a" {
		t.Fatalf("first page %+v", first)
	}
	row := first.Sessions[0]
	if row.Rule != 0 || row.Key != "a" || row.Replica != "r2" || !row.Created.Equal(t0.Add(time.Second)) ||
		!row.LastUsed.Equal(row.Created) || !row.Expires.Equal(row.Created.Add(time.Minute)) {
		t.Errorf("row %+v", row)
	}
	second := page("?limit=1&after=" + first.Next)
	if len(second.Sessions) != 1 || second.Next != "" || second.Sessions[0].Key != "c" {
		t.Errorf("second page %+v, want c, the last page", second)
	}

	a := get(t, c, e.adminURL+"/metrics")
	for _, line := range []string{
		`fulcrum_group_session_entries{group="o",kind="client-activated"} 2`,
		`fulcrum_group_session_entries{group="o",kind="singleton"} 0`,
		`fulcrum_group_session_entries_total{event="created",group="o"} 3`,
		`fulcrum_group_session_entries_total{event="evicted",group="o"} 1`,
		`fulcrum_group_session_entries_total{event="expired",group="o"} 0`,
		`fulcrum_group_session_entries_total{event="gone",group="o"} 0`,
	} {
		if !strings.Contains(a.body, line+"\n") {
			t.Errorf("/metrics has no line %s", line)
		}
	}
	if strings.Contains(a.body, `fulcrum_group_session_entries{group="o",kind="single-call"}`) {
		t.Errorf("/metrics exports a kind the group's rules do not use")
	}
}
