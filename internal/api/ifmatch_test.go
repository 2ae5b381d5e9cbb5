package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// etagOf returns a's ETag header, checking that it is the strong form of
// the revision in its group status body.
func etagOf(t *testing.T, a answer) string {
	t.Helper()
	tag := a.header.Get("ETag")
	var st protocol.GroupStatus
	a.decode(t, &st)
	if st.Revision <= 0 || tag != `"`+strconv.FormatInt(st.Revision, 10)+`"` {
		t.Fatalf("ETag %q, revision %d in the body: want a positive revision and ETag %q", tag, st.Revision, `"`+strconv.FormatInt(st.Revision, 10)+`"`)
	}
	return tag
}

// revisionOf reads an error body's revision.
func revisionOf(t *testing.T, a answer) int64 {
	t.Helper()
	var eb struct {
		Error struct {
			Revision *int64 `json:"revision"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &eb); err != nil || eb.Error.Revision == nil {
		t.Fatalf("no revision in the error body: %s", a.body)
	}
	return *eb.Error.Revision
}

func TestETagChangesOnEachWriteOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	a := e.call("PUT", "/v1/groups/g", "", group(nil))
	want(t, a, http.StatusCreated)
	created := etagOf(t, a)
	a = e.call("GET", "/v1/groups/g", "", nil)
	want(t, a, http.StatusOK)
	if got := etagOf(t, a); got != created {
		t.Fatalf("GET ETag %s, want the PUT's %s", got, created)
	}

	// A replica's registration and its reports leave the revision alone.
	r := e.mustRegister("g", "http://127.0.0.1:9001")
	want(t, e.call("POST", "/v1/report", r.Token, map[string]any{"load": 3}), http.StatusOK)
	a = e.call("GET", "/v1/groups/g", "", nil)
	if got := etagOf(t, a); got != created {
		t.Fatalf("ETag %s after a registration and a report, want %s", got, created)
	}

	seen := map[string]bool{created: true}
	a = e.call("PATCH", "/v1/groups/g", "", map[string]any{"binding": "per-request"})
	want(t, a, http.StatusOK)
	patched := etagOf(t, a)
	a = e.call("PUT", "/v1/groups/g", "", group(nil))
	want(t, a, http.StatusOK)
	replaced := etagOf(t, a)
	for _, tag := range []string{patched, replaced} {
		if seen[tag] {
			t.Fatalf("ETag %s repeated after a write (seen %v)", tag, seen)
		}
		seen[tag] = true
	}

	// The list carries each group's revision too.
	a = e.call("GET", "/v1/groups", "", nil)
	var list struct {
		Groups []protocol.GroupStatus `json:"groups"`
	}
	a.decode(t, &list)
	if len(list.Groups) != 1 || `"`+strconv.FormatInt(list.Groups[0].Revision, 10)+`"` != replaced {
		t.Fatalf("list %s, want revision %s", a.body, replaced)
	}
}

func TestIfMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	a := e.call("PUT", "/v1/groups/g", "", group(nil))
	old := etagOf(t, a)
	a = e.call("PATCH", "/v1/groups/g", "", map[string]any{"strategy": "round-robin"}, "If-Match", old)
	want(t, a, http.StatusOK)
	cur := etagOf(t, a)

	// The old ETag no longer matches: 412, the current revision in the
	// body and the ETag header, and nothing changed.
	for _, w := range []struct{ method, body string }{
		{"PATCH", `{"strategy":"least-loaded"}`},
		{"PUT", `{"front_door":"127.0.0.1:0","strategy":"least-loaded"}`},
		{"DELETE", ""},
	} {
		var body any
		if w.body != "" {
			body = w.body
		}
		a = e.call(w.method, "/v1/groups/g", "", body, "If-Match", old)
		wantError(t, a, http.StatusPreconditionFailed, "revision_mismatch", "If-Match")
		if got := `"` + strconv.FormatInt(revisionOf(t, a), 10) + `"`; got != cur || a.header.Get("ETag") != cur {
			t.Fatalf("%s: 412 with revision %s and ETag %q, want %s", w.method, got, a.header.Get("ETag"), cur)
		}
	}
	st, err := e.b.Group("g")
	if err != nil || st.Strategy != "round-robin" {
		t.Fatalf("after refused writes: strategy %q, err %v; want round-robin", st.Strategy, err)
	}

	// "*" matches any existing group, and no absent one.
	a = e.call("PATCH", "/v1/groups/g", "", map[string]any{"strategy": "least-loaded"}, "If-Match", "*")
	want(t, a, http.StatusOK)
	a = e.call("PUT", "/v1/groups/absent", "", group(nil), "If-Match", "*")
	wantError(t, a, http.StatusPreconditionFailed, "revision_mismatch", "If-Match")
	if rev := revisionOf(t, a); rev != 0 || a.header.Get("ETag") != "" {
		t.Fatalf("absent group: revision %d, ETag %q; want 0 and none", rev, a.header.Get("ETag"))
	}
	if _, err := e.b.Group("absent"); err == nil {
		t.Fatal("PUT with If-Match: * created an absent group")
	}

	// The current ETag deletes.
	cur = etagOf(t, e.call("GET", "/v1/groups/g", "", nil))
	want(t, e.call("DELETE", "/v1/groups/g", "", nil, "If-Match", cur), http.StatusNoContent)
	want(t, e.call("GET", "/v1/groups/g", "", nil), http.StatusNotFound)
}

func TestIfMatchMalformed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	for _, v := range []string{`12`, `W/"12"`, `"abc"`, `"0"`, `"-3"`, `""`, `"1", "2"`, `"+4"`} {
		for _, method := range []string{"PUT", "PATCH", "DELETE"} {
			var body any
			if method != "DELETE" {
				body = map[string]any{"front_door": "127.0.0.1:0"}
				if method == "PATCH" {
					body = map[string]any{"binding": "per-request"}
				}
			}
			a := e.call(method, "/v1/groups/g", "", body, "If-Match", v)
			wantError(t, a, http.StatusBadRequest, "invalid_value", "If-Match")
		}
	}
	if _, err := e.b.Group("g"); err != nil {
		t.Fatalf("a malformed If-Match changed the group: %v", err)
	}
}

// Two admins race on one group with the same ETag: exactly one write wins,
// every other gets 412, and the balancer runs the winner's settings.
func TestIfMatchRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	tag := etagOf(t, e.call("PUT", "/v1/groups/g", "", group(nil)))
	const n = 16
	dampening := func(i int) float64 { return float64(i+1) / 100 }
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := map[string]any{"strategy": "least-loaded", "params": map[string]any{"dampening": dampening(i)}}
			answers[i] = e.call("PATCH", "/v1/groups/g", "", body, "If-Match", tag)
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, a := range answers {
		switch a.status {
		case http.StatusOK:
			if winner >= 0 {
				t.Fatalf("writes %d and %d both won with If-Match %s", winner, i, tag)
			}
			winner = i
		case http.StatusPreconditionFailed:
			if a.err(t).Code != "revision_mismatch" {
				t.Fatalf("412 %s", a.body)
			}
		default:
			t.Fatalf("write %d: status %d: %s", i, a.status, a.body)
		}
	}
	if winner < 0 {
		t.Fatal("no write won")
	}
	winTag := etagOf(t, answers[winner])
	for i, a := range answers {
		if i != winner && a.header.Get("ETag") != winTag {
			t.Errorf("write %d: 412 with ETag %q, want the winner's %s", i, a.header.Get("ETag"), winTag)
		}
	}
	st, err := e.b.Group("g")
	if err != nil {
		t.Fatal(err)
	}
	if st.Strategy != "least-loaded" || st.Params["dampening"] != dampening(winner) {
		t.Fatalf("balancer runs %s %v, want the winner's dampening %v", st.Strategy, st.Params, dampening(winner))
	}
}

// Writes without If-Match racing on one group all succeed, each at its own
// revision, and none of them is lost.
func TestWritesWithoutIfMatchNeverConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", map[string]any{"strategy": "least-loaded"})
	const n = 12
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Each PATCH merges one parameter; a lost update would drop one.
			params := map[string]any{}
			switch i % 3 {
			case 0:
				params["dampening"] = 0.5
			case 1:
				params["tolerance"] = 2.0
			case 2:
				params["dampening"] = 0.5
				params["tolerance"] = 2.0
			}
			answers[i] = e.call("PATCH", "/v1/groups/g", "", map[string]any{"params": params})
		}()
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	for i, a := range answers {
		want(t, a, http.StatusOK)
		tag := etagOf(t, a)
		if j, dup := seen[tag]; dup {
			t.Fatalf("writes %d and %d both answered ETag %s", j, i, tag)
		}
		seen[tag] = i
	}
	st, err := e.b.Group("g")
	if err != nil {
		t.Fatal(err)
	}
	if st.Params["dampening"] != 0.5 || st.Params["tolerance"] != 2.0 {
		t.Fatalf("params %v after the racing patches, want dampening 0.5 and tolerance 2", st.Params)
	}
}

// Creates racing with If-None-Match: * on one name: exactly one creates
// the group (201), every other gets 412 group_exists.
func TestIfNoneMatchRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	const n = 12
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = e.call("PUT", "/v1/groups/g", "", group(nil), "If-None-Match", "*")
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i, a := range answers {
		switch a.status {
		case http.StatusCreated:
			created++
		case http.StatusPreconditionFailed:
			if a.err(t).Code != "group_exists" {
				t.Fatalf("create %d: %s", i, a.body)
			}
		default:
			t.Fatalf("create %d: status %d: %s", i, a.status, a.body)
		}
	}
	if created != 1 {
		t.Fatalf("%d creates succeeded with If-None-Match: *, want 1", created)
	}
}
