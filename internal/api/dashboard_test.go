package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// TestDashboardFilesArePublic checks that /ui/ serves the page and its
// vendored library without a token, with a policy that forbids other
// origins, while the data it reads keeps the admin token's rule.
func TestDashboardFilesArePublic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	a := e.call("GET", "/ui/", "", nil)
	want(t, a, http.StatusOK)
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("/ui/ Content-Type %q, want text/html", ct)
	}
	if !strings.Contains(string(a.body), `src="app.js"`) {
		t.Errorf("/ui/ does not load app.js:\n%s", a.body)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("/ui/ Content-Security-Policy %q, want only its own origin", csp)
	}
	for _, path := range []string{"/ui/app.js", "/ui/style.css", "/ui/vendor/uplot/uPlot.iife.min.js", "/ui/vendor/uplot/uPlot.min.css", "/ui/vendor/uplot/LICENSE"} {
		want(t, e.call("GET", path, "", nil), http.StatusOK)
	}
	want(t, e.call("GET", "/ui/no-such-file.js", "", nil), http.StatusNotFound)
	wantError(t, e.call("GET", "/v1/groups", "", nil), http.StatusUnauthorized, "unauthorized", "")

	req, err := http.NewRequest("GET", e.srv.URL+"/ui", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d Location %q, want 301 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestCrossOriginChangesRefused sends changes as a browser on another
// origin would (Sec-Fetch-Site: cross-site, or only a foreign Origin):
// they are refused with 403 cross_origin and change nothing, even with the
// admin token; the same changes from the API's own origin, or from a
// client that is no browser, go through.
func TestCrossOriginChangesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", map[string]any{"strategy": "least-loaded"})
	r := e.mustRegister("g", "http://127.0.0.1:9")
	host := strings.TrimPrefix(e.srv.URL, "http://")

	strategy := func() string {
		t.Helper()
		var st struct {
			Strategy string `json:"strategy"`
		}
		a := e.call("GET", "/v1/groups/g", adminToken, nil)
		want(t, a, http.StatusOK)
		a.decode(t, &st)
		return st.Strategy
	}
	patch := map[string]any{"strategy": "round-robin"}
	drain := "/v1/groups/g/replicas/" + r.ID + "/drain"

	wantError(t, e.call("PATCH", "/v1/groups/g", adminToken, patch, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "cross_origin", "")
	wantError(t, e.call("POST", drain, adminToken, nil, "Origin", "http://evil.example"), http.StatusForbidden, "cross_origin", "")
	wantError(t, e.call("DELETE", "/v1/groups/g", adminToken, nil, "Sec-Fetch-Site", "same-site", "Origin", "http://other."+host), http.StatusForbidden, "cross_origin", "")
	if got := strategy(); got != "least-loaded" {
		t.Fatalf("after refused changes the strategy is %q, want least-loaded", got)
	}
	var rs struct {
		State string `json:"state"`
	}
	// Reads from anywhere are allowed (they still need the token).
	want(t, e.call("GET", "/v1/groups/g", adminToken, nil, "Sec-Fetch-Site", "cross-site"), http.StatusOK)

	a := e.call("PATCH", "/v1/groups/g", adminToken, patch, "Sec-Fetch-Site", "same-origin", "Origin", e.srv.URL)
	want(t, a, http.StatusOK)
	if got := strategy(); got != "round-robin" {
		t.Fatalf("after a same-origin PATCH the strategy is %q, want round-robin", got)
	}
	a = e.call("POST", drain, adminToken, nil, "Origin", e.srv.URL)
	want(t, a, http.StatusOK)
	a.decode(t, &rs)
	if rs.State != "draining" {
		t.Fatalf("same-origin drain answered state %q, want draining", rs.State)
	}
	want(t, e.call("POST", "/v1/groups/g/replicas/"+r.ID+"/activate", adminToken, nil), http.StatusOK) // no browser headers
}

// TestStepEventsCarryLiveFigures checks that a "step" event gives each
// replica the live figures of its status (what the dashboard shows without
// polling), a group with affinity rules its session count and a tcp group
// its open connections.
func TestStepEventsCarryLiveFigures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{Instance: testInstance})
	e.mustGroup("g", map[string]any{"report_interval": "50ms"})
	e.mustGroup("aff", map[string]any{"report_interval": "50ms", "binding": "per-request",
		"affinity": []map[string]any{{"kind": "singleton", "match": "/obj/{id}"}}})
	e.mustGroup("tcp", map[string]any{"report_interval": "50ms", "protocol": "tcp", "health": map[string]any{"path": ""}})
	a := e.call("POST", "/v1/groups/g/replicas", adminToken, map[string]any{"address": "http://127.0.0.1:9001", "weight": 2})
	want(t, a, http.StatusCreated)
	var r registered
	a.decode(t, &r)
	ctx := boundedContext(t)
	s := e.openAll(ctx, "")
	defer s.cancel()

	type rep struct {
		ID           string   `json:"id"`
		Weight       float64  `json:"weight"`
		Inflight     *int64   `json:"inflight"`
		Source       string   `json:"source"`
		RPS          *float64 `json:"rps"`
		LatencyP50MS *float64 `json:"latency_p50_ms"`
		LatencyP99MS *float64 `json:"latency_p99_ms"`
		BoundClients *int64   `json:"bound_clients"`
		Ejections    *uint64  `json:"ejections"`
	}
	type step struct {
		Replicas    []rep `json:"replicas"`
		Sessions    *int  `json:"sessions"`
		Connections *int  `json:"connections"`
	}
	decode := func(be balancer.Event) step {
		t.Helper()
		b, err := json.Marshal(be.Data)
		if err != nil {
			t.Fatal(err)
		}
		var st step
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	report := `{"load": 7, "metrics": {"rps": 12.5, "latency_p50_ms": 1.5, "latency_p99_ms": 9, "bound_clients": 3}}`
	var got rep
	for got.RPS == nil {
		want(t, e.call("POST", "/v1/report", r.Token, report), http.StatusOK)
		be := s.until(ctx, func(ev sseEvent, be balancer.Event) bool { return ev.event == "step" && be.Group == "g" })
		st := decode(be)
		if len(st.Replicas) != 1 {
			t.Fatalf("step of g with %d replicas, want 1: %+v", len(st.Replicas), st)
		}
		got = st.Replicas[0]
	}
	if got.ID != r.ID || got.Weight != 2 || got.Inflight == nil || *got.Inflight != 0 || got.Source != "report" ||
		*got.RPS != 12.5 || got.LatencyP50MS == nil || *got.LatencyP50MS != 1.5 || got.LatencyP99MS == nil || *got.LatencyP99MS != 9 ||
		got.BoundClients == nil || *got.BoundClients != 3 || got.Ejections == nil || *got.Ejections != 0 {
		t.Fatalf("step replica %+v, want the status's live figures (weight 2, inflight 0, source report, rps 12.5, p50 1.5, p99 9, bound 3, ejections 0)", got)
	}
	be := s.until(ctx, func(ev sseEvent, be balancer.Event) bool { return ev.event == "step" && be.Group == "aff" })
	if st := decode(be); st.Sessions == nil || *st.Sessions != 0 {
		t.Fatalf("step of a group with affinity rules: sessions %v, want 0", st.Sessions)
	}
	be = s.until(ctx, func(ev sseEvent, be balancer.Event) bool { return ev.event == "step" && be.Group == "tcp" })
	if st := decode(be); st.Connections == nil || *st.Connections != 0 || st.Sessions != nil {
		t.Fatalf("step of a tcp group: connections %v, sessions %v, want 0 and none", st.Connections, st.Sessions)
	}
}
