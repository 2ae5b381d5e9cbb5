package monitor

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestChooseShed(t *testing.T) {
	t.Parallel()
	rates := []protocol.ClientRate{{ID: "a", Rate: 50}, {ID: "b", Rate: 30}, {ID: "c", Rate: 10}, {ID: "d", Rate: 5}}
	tests := []struct {
		name   string
		rates  []protocol.ClientRate
		target float64
		want   []string
	}{
		{"nothing to shed", rates, 0, nil},
		{"busiest first", rates, 80, []string{"a", "b"}},
		{"exact fit skips a client too big", rates, 40, []string{"b", "c"}},
		{"everyone", rates, 95, []string{"a", "b", "c", "d"}},
		{"more than there is", rates, 500, []string{"a", "b", "c", "d"}},
		{"one client a little too big still helps", []protocol.ClientRate{{ID: "a", Rate: 12}}, 10, []string{"a"}},
		{"one client far too big does not", []protocol.ClientRate{{ID: "a", Rate: 100}}, 10, nil},
		{"tops up with the least busy too-big client", []protocol.ClientRate{{ID: "a", Rate: 60}, {ID: "b", Rate: 14}, {ID: "c", Rate: 1.5}}, 15, []string{"b", "c"}},
		{"no clients", nil, 10, nil},
		{"idle clients are not moved", []protocol.ClientRate{{ID: "a", Rate: 0}}, 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := chooseShed(tc.rates, tc.target); !slices.Equal(got, tc.want) {
				t.Fatalf("chooseShed(%v, %v) = %v, want %v", tc.rates, tc.target, got, tc.want)
			}
		})
	}
}

func TestClientTableForgetsIdleClients(t *testing.T) {
	t.Parallel()
	ct := newClientTable()
	ct.count("a")
	ct.count("a")
	ct.count("b")
	got := ct.window(2)
	want := []protocol.ClientRate{{ID: "a", Rate: 1}, {ID: "b", Rate: 0.5}}
	if !slices.Equal(got, want) {
		t.Fatalf("window = %v, want %v", got, want)
	}
	for range idleWindows {
		if got := ct.window(1); len(got) != 0 {
			t.Fatalf("idle window = %v, want none", got)
		}
	}
	tracked := 0
	for i := range ct.shards {
		tracked += len(ct.shards[i].m)
	}
	if tracked != 0 {
		t.Fatalf("%d idle clients still tracked, want 0", tracked)
	}
}

// nopWriter is a ResponseWriter that keeps nothing.
type nopWriter struct{ h http.Header }

func (w nopWriter) Header() http.Header       { return w.h }
func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) WriteHeader(int)             {}

func TestServeDoesNotAllocate(t *testing.T) {
	m, err := New(Options{Admin: "http://127.0.0.1:7070", Group: "g", Token: "t", FrontDoor: "http://fd",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := nopWriter{h: http.Header{}}
	plain := httptest.NewRequest(http.MethodGet, "/prime/7", nil)
	bound := httptest.NewRequest(http.MethodGet, "/prime/7", nil)
	bound.Header.Set(protocol.HeaderBinding, "g/r1")
	bound.Header.Set(protocol.HeaderClient, "client-1")
	h.ServeHTTP(w, bound) // first sight of the client allocates its counter
	for name, req := range map[string]*http.Request{"plain": plain, "bound": bound} {
		if allocs := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, req) }); allocs != 0 {
			t.Errorf("%s call: %v allocations, want 0", name, allocs)
		}
	}
	// Under a high advisory for someone else, still none.
	m.reportMu.Lock()
	m.applyLocked(protocol.Advisory{Advisory: protocol.High, Epoch: 1, Clients: []string{"other"}})
	m.reportMu.Unlock()
	if allocs := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, bound) }); allocs != 0 {
		t.Errorf("bound call under high: %v allocations, want 0", allocs)
	}
}
