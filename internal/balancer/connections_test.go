package balancer_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fillConnTable puts five connections in group name's table at the
// clock's time (ids 1-5: r1, r2, r1, r1, r2), bytes on three, closes the
// fourth and counts three refusals, then moves the clock 3 s.
func fillConnTable(e *env, clk *clocktest.Manual, name string) []*conntable.Entry {
	tab := e.b.ConnTable(name)
	t0 := clk.Now()
	var es []*conntable.Entry
	for i, rep := range []string{"r1", "r2", "r1", "r1", "r2"} {
		es = append(es, tab.Add("10.0.0.9:4000"+string(rune('0'+i)), rep, "127.0.0.1:700"+rep[1:], t0, nil))
	}
	es[0].AddIn(100, t0.Add(time.Second))
	es[0].AddOut(2000, t0.Add(2*time.Second))
	es[1].AddIn(7, t0.Add(time.Second))
	es[3].AddOut(5, t0)
	tab.Remove(es[3]) // its bytes stay in r1's totals
	tab.Refuse(conntable.RefuseMaxConnections)
	tab.Refuse(conntable.RefuseMaxConnections)
	tab.Refuse(conntable.RefuseNoReplica)
	clk.Advance(3 * time.Second)
	return es
}

// TestConnectionTableInAPI fills a group's connection table by hand (the
// front door's part) and reads it back through Balancer.Connections and
// the real admin API's GET /v1/groups/{name}/connections, page by page.
func TestConnectionTableInAPI(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	e := newEnv(t, envOptions{clock: clk, admin: true})
	e.mustPutGroup(protocol.Group{Name: "t", Binding: protocol.PerRequest})
	t0 := clk.Now()
	es := fillConnTable(e, clk, "t")

	// Balancer.Connections clamps the limit and knows no other group.
	if l, err := e.b.Connections("t", 0, 0); err != nil || len(l.Connections) != 1 || l.Next != es[0].ID || l.Total != 4 {
		t.Errorf("Connections(limit 0) = %+v, %v; want one connection, next %d, total 4", l, err, es[0].ID)
	}
	if _, err := e.b.Connections("nope", 0, 10); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Connections(nope): %v, want ErrUnknownGroup", err)
	}

	c := adminClient(t)
	page := func(q string) protocol.ConnectionList {
		t.Helper()
		a := get(t, c, e.adminURL+"/v1/groups/t/connections"+q)
		if a.status != http.StatusOK {
			t.Fatalf("connections%s: %d %s", q, a.status, a.body)
		}
		var l protocol.ConnectionList
		if err := json.Unmarshal([]byte(a.body), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := page("?limit=2")
	if first.Total != 4 || len(first.Connections) != 2 || first.Next != es[1].ID {
		t.Fatalf("first page %+v", first)
	}
	row := first.Connections[0]
	if row.ID != es[0].ID || row.Client != "10.0.0.9:40000" || row.Replica != "r1" || row.Address != "127.0.0.1:7001" ||
		row.BytesIn != 100 || row.BytesOut != 2000 || row.AgeMS != 3000 || row.IdleMS != 1000 || !row.Opened.Equal(t0) {
		t.Errorf("row %+v", row)
	}
	second := page("?limit=2&after=" + strconv.FormatUint(first.Next, 10))
	if len(second.Connections) != 2 || second.Next != 0 || second.Connections[0].ID != es[2].ID || second.Connections[1].ID != es[4].ID {
		t.Errorf("second page %+v, want %d and %d, the last page", second, es[2].ID, es[4].ID)
	}
	if all := page(""); len(all.Connections) != 4 || all.Next != 0 {
		t.Errorf("default page %+v, want all 4", all)
	}
}
