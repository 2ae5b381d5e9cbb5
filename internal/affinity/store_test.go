package affinity

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// mapStore is a Store in memory that records the calls made to it (the
// etcd Store is tested against etcd where it lives).
type mapStore struct {
	mu    sync.Mutex
	m     map[string]string
	calls []string
}

func (s *mapStore) log(f string, a ...any) { s.calls = append(s.calls, fmt.Sprintf(f, a...)) }

func (s *mapStore) Put(_ context.Context, rule int, key, replica string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[fmt.Sprint(rule, "/", key)] = replica
	s.log("put %d/%s %s %s", rule, key, replica, ttl)
	return nil
}

func (s *mapStore) Renew(_ context.Context, rule int, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log("renew %d/%s", rule, key)
	return nil
}

func (s *mapStore) Get(_ context.Context, rule int, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, ok := s.m[fmt.Sprint(rule, "/", key)]
	s.log("get %d/%s", rule, key)
	return rep, ok, nil
}

func (s *mapStore) Delete(_ context.Context, rule int, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, fmt.Sprint(rule, "/", key))
	s.log("delete %d/%s", rule, key)
	return nil
}

func (s *mapStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

// TestRouterStore: an entry created on one instance is put in the Store
// (lease: the timeout in whole seconds), found there by another instance
// (adopted, not counted as created), renewed at most once per timeout/3,
// and deleted when its replica is lost.
func TestRouterStore(t *testing.T) {
	t.Parallel()
	st := &mapStore{m: map[string]string{}}
	clk := &clock{t0}
	rules, err := Compile("http", []protocol.AffinityRule{{Kind: protocol.AffinityClientActivated, Match: "/o/{id}", Timeout: protocol.Duration(2500 * time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	one, two := NewTable(rules), NewTable(rules)
	one.SetStore(st)
	two.SetStore(st)
	ms := members("r1", "active", "r2", "active")
	a := NewRouter(one, "g", ms, true, clk.now)
	b := NewRouter(two, "g", ms, true, clk.now)
	post := get(t, "/o/")
	a.Answered(post, a.RouteHTTP(post), "r2", 201, map[string][]string{"Location": {"/o/7"}})
	if got := st.take(); len(got) != 1 || got[0] != "put 0/7 r2 3s" {
		t.Fatalf("store calls %q, want the put with a 3s lease", got)
	}
	if d := b.RouteHTTP(get(t, "/o/7")); d.Replica != "r2" {
		t.Fatalf("the other instance routes %+v, want r2 from the store", d)
	}
	if s := two.Stats(); s.Created != 0 || s.Entries[protocol.AffinityClientActivated] != 1 {
		t.Fatalf("adopted entry: %+v", s)
	}
	st.take()
	clk.t = t0.Add(500 * time.Millisecond)
	a.RouteHTTP(get(t, "/o/7")) // 0.5s after the put: no renewal
	clk.t = t0.Add(900 * time.Millisecond)
	a.RouteHTTP(get(t, "/o/7")) // 0.9s ≥ 2.5s/3: renewed
	a.RouteHTTP(get(t, "/o/7")) // just renewed
	if got := st.take(); len(got) != 1 || got[0] != "renew 0/7" {
		t.Fatalf("store calls %q, want one renewal", got)
	}
	lost := NewRouter(one, "g", members("r1", "active", "r2", "down"), true, clk.now)
	if d := lost.RouteHTTP(get(t, "/o/7")); !d.Gone {
		t.Fatalf("replica down: %+v", d)
	}
	if got := st.take(); len(got) != 1 || got[0] != "delete 0/7" {
		t.Fatalf("store calls %q, want the delete", got)
	}
	if StoreTTL(500*time.Millisecond) != 2*time.Second || StoreTTL(2001*time.Millisecond) != 3*time.Second {
		t.Fatal("StoreTTL: whole seconds rounded up, at least 2s")
	}
}
