package backend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestObjectsHTTP: a created object counts its calls on the replica that
// holds it and is unknown (404) on another; a singleton counts on any
// replica; GET /objects lists the counts; a bad x is a 400 naming it.
func TestObjectsHTTP(t *testing.T) {
	t.Parallel()
	a := httptest.NewServer(NewPrime(func() string { return "ra" }))
	defer a.Close()
	b := httptest.NewServer(NewPrime(func() string { return "rb" }))
	defer b.Close()
	do := func(method, url string) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		return resp.StatusCode, resp.Header, m
	}
	code, h, m := do("POST", a.URL+"/objects")
	loc := h.Get("Location")
	if code != http.StatusCreated || !strings.HasPrefix(loc, "/objects/") || m["served_by"] != "ra" || "/objects/"+m["id"].(string) != loc {
		t.Fatalf("create = %d, Location %q, %v", code, loc, m)
	}
	for i := 1; i <= 2; i++ {
		if code, _, m := do("GET", a.URL+loc+"?x=100"); code != 200 || m["calls"] != float64(i) || m["count"] != 25.0 || m["served_by"] != "ra" {
			t.Errorf("call %d on its replica = %d %v", i, code, m)
		}
	}
	if code, _, m := do("GET", b.URL+loc+"?x=100"); code != http.StatusNotFound || m["served_by"] != "rb" {
		t.Errorf("call on another replica = %d %v, want 404", code, m)
	}
	if code, _, m := do("GET", b.URL+"/singletons/s1?x=10"); code != 200 || m["calls"] != 1.0 || m["count"] != 4.0 {
		t.Errorf("singleton = %d %v", code, m)
	}
	if code, _, m := do("GET", a.URL+loc+"?x=-1"); code != http.StatusBadRequest || !strings.Contains(m["error"].(map[string]any)["message"].(string), "x: invalid value") {
		t.Errorf("bad x = %d %v", code, m)
	}
	resp, err := http.Get(a.URL + "/objects")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var oc ObjectCounts
	if err := json.NewDecoder(resp.Body).Decode(&oc); err != nil {
		t.Fatal(err)
	}
	if oc.ServedBy != "ra" || len(oc.Objects) != 1 || oc.Objects[strings.TrimPrefix(loc, "/objects/")] != 2 || len(oc.Singletons) != 0 {
		t.Errorf("GET /objects = %+v", oc)
	}
}
