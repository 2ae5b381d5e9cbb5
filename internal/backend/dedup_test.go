package backend_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

// A deduplicating counter applies each Idempotency-Key once: concurrent and
// later copies of a key get the first reply, requests without a key are
// each applied, and a key forgotten (beyond the bound) is applied again.
func TestDedupAppliesEachKeyOnce(t *testing.T) {
	t.Parallel()
	c := &backend.Counter{}
	d := backend.NewDedup(backend.NewCounterHandler(c, backend.CounterOptions{}), 4)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	inc := func(key string) (int, string) {
		h := map[string]string{}
		if key != "" {
			h[backend.HeaderIdempotencyKey] = key
		}
		status, body := do(t, http.MethodPost, srv.URL+"/increment", nil, h)
		return status, string(body)
	}

	// 8 copies of each of 3 keys, all at once.
	replies := make(map[string]map[string]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	keys := []string{"g/1/0", "g/2/0", "g/3/0"}
	for _, key := range keys {
		replies[key] = map[string]int{} // all made before any goroutine reads the map
	}
	for _, key := range keys {
		for range 8 {
			wg.Go(func() {
				status, body := inc(key)
				mu.Lock()
				replies[key][fmt.Sprint(status, " ", body)]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if v := c.State().Value; v != 3 {
		t.Fatalf("24 requests with 3 keys left the counter at %d, want 3", v)
	}
	seen := map[string]bool{}
	for key, rs := range replies {
		if len(rs) != 1 {
			t.Fatalf("the copies of %s got different replies: %v", key, rs)
		}
		for r := range rs {
			if seen[r] {
				t.Fatalf("two keys got the reply %q", r)
			}
			seen[r] = true
		}
	}
	if n := d.Duplicates(); n != 21 {
		t.Fatalf("Duplicates() = %d, want 21", n)
	}

	// Without a key every request is applied.
	inc("")
	inc("")
	if v := c.State().Value; v != 5 {
		t.Fatalf("two requests without a key: counter %d, want 5", v)
	}
	// Bounded to 4 keys, the oldest forgotten first. The keys above
	// arrived concurrently, in no known order: the bound is checked on a
	// fresh Dedup whose keys arrive one after another.
	c2 := &backend.Counter{}
	d2 := backend.NewDedup(backend.NewCounterHandler(c2, backend.CounterOptions{}), 4)
	srv2 := httptest.NewServer(d2)
	t.Cleanup(srv2.Close)
	inc2 := func(key string) (int, string) {
		status, body := do(t, http.MethodPost, srv2.URL+"/increment", nil, map[string]string{backend.HeaderIdempotencyKey: key})
		return status, string(body)
	}
	for _, key := range []string{"g/1/0", "g/2/0", "g/3/0", "g/4/0", "g/5/0"} {
		inc2(key)
	}
	// g/5 made the oldest, g/1, forgotten; g/2 to g/5 are still known.
	if _, body := inc2("g/3/0"); c2.State().Value != 5 {
		t.Fatalf("a remembered key was applied again: %s, counter %d", body, c2.State().Value)
	}
	if status, body := inc2("g/1/0"); status != http.StatusOK || body != "{\"value\":6}\n" || c2.State().Value != 6 {
		t.Fatalf("a forgotten key: %d %q, counter %d, want it applied again at 6", status, body, c2.State().Value)
	}
}
