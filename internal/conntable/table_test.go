package conntable_test

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
)

func TestTableListsPagesAndTotals(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tab := conntable.New()
	var es []*conntable.Entry
	for i := range 5 {
		es = append(es, tab.Add("10.0.0.1:100"+string(rune('0'+i)), []string{"r1", "r2"}[i%2], "127.0.0.1:7000", t0, nil))
	}
	es[0].AddIn(10, t0.Add(time.Second))
	es[0].AddOut(30, t0.Add(2*time.Second))
	tab.Remove(es[1])
	tab.Remove(es[1])

	page := tab.List(0, 2, t0.Add(3*time.Second))
	if page.Total != 4 || len(page.Connections) != 2 || page.Next != es[2].ID {
		t.Fatalf("first page: %+v", page)
	}
	if c := page.Connections[0]; c.BytesIn != 10 || c.BytesOut != 30 || c.AgeMS != 3000 || c.IdleMS != 1000 {
		t.Errorf("row: %+v", c)
	}
	page = tab.List(page.Next, 2, t0)
	if len(page.Connections) != 2 || page.Next != 0 || page.Connections[1].ID != es[4].ID {
		t.Fatalf("last page: %+v", page)
	}
	tot := tab.Totals()
	if tot["r1"].Open != 3 || tot["r1"].Accepted != 3 || tot["r1"].BytesIn != 10 || tot["r2"].Open != 1 || tot["r2"].Accepted != 2 {
		t.Errorf("totals: %+v", tot)
	}
	if tab.OpenTo("r2") != 1 || tab.Len() != 4 {
		t.Errorf("open to r2 %d, len %d", tab.OpenTo("r2"), tab.Len())
	}
}

func TestEntryClosesOnce(t *testing.T) {
	t.Parallel()
	n := 0
	tab := conntable.New()
	e := tab.Add("c:1", "r", "a:1", time.Unix(0, 0), func() { n++ })
	if !e.Close() || e.Close() || n != 1 {
		t.Fatalf("Close twice: closer ran %d times", n)
	}
}
