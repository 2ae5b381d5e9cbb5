package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
)

// TestHealthReportsBuild: /healthz and /readyz carry the build the
// handler was given, field by field.
func TestHealthReportsBuild(t *testing.T) {
	t.Parallel()
	build := buildinfo.Info{Version: "v1.2.3", Commit: "0123abcd+dirty", CommitTime: "2026-11-27T05:12:13Z", GoVersion: "go1.26.8"}
	e := newEnv(t, api.Options{Build: build}, balancer.Options{})
	for path, status := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		a := e.call("GET", path, "", nil)
		want(t, a, http.StatusOK)
		var body map[string]string
		if err := json.Unmarshal(a.body, &body); err != nil {
			t.Fatalf("%s: %v: %s", path, err, a.body)
		}
		wantBody := map[string]string{"status": status, "version": "v1.2.3", "commit": "0123abcd+dirty", "commit_time": "2026-11-27T05:12:13Z", "go_version": "go1.26.8"}
		if len(body) != len(wantBody) {
			t.Errorf("%s: %s, want the keys of %v", path, a.body, wantBody)
		}
		for k, v := range wantBody {
			if body[k] != v {
				t.Errorf("%s: %s = %q, want %q", path, k, body[k], v)
			}
		}
	}
}
