package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", map[string]any{"report_interval": "100ms"})
	r := e.mustRegister("g", "http://127.0.0.1:9001")
	steps := e.steps("g")
	report := map[string]any{
		"load": 42.5, "metrics": map[string]any{"rps": 42.5, "inflight": 2},
		"clients": []map[string]any{{"id": "c1", "rate": 30}, {"id": "c2", "rate": 12.5}},
	}

	a := e.call("POST", "/v1/report", r.Token, report)
	want(t, a, http.StatusOK)
	var adv struct {
		Advisory       string  `json:"advisory"`
		Shed           float64 `json:"shed"`
		Epoch          *uint64 `json:"epoch"`
		ReportInterval string  `json:"report_interval"`
	}
	a.decode(t, &adv)
	if adv.Advisory != "nominal" || adv.ReportInterval != "100ms" || adv.Epoch == nil {
		t.Fatalf("advisory %s", a.body)
	}
	// The report reaches the status once the analyzer has stepped. A
	// report is fresh for three intervals, so keep reporting as a monitor
	// does in case the machine is slow.
	ctx := boundedContext(t)
	for {
		nextStep(ctx, t, steps)
		a := e.call("GET", "/v1/groups/g", "", nil)
		var st protocol.GroupStatus
		a.decode(t, &st)
		if len(st.Replicas) == 1 && st.Replicas[0].Load != nil {
			if *st.Replicas[0].Load != 42.5 || st.Replicas[0].ReportAgeMS == nil {
				t.Fatalf("status after report: %s", a.body)
			}
			break
		}
		want(t, e.call("POST", "/v1/report", r.Token, report), http.StatusOK)
	}
}

func TestReportBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	e.mustGroup("g", nil)
	r := e.mustRegister("g", "http://127.0.0.1:9001")
	tests := []struct {
		name, token string
		body        string
		status      int
		code, field string
	}{
		{"missing token", "", `{"load":1}`, 401, "unauthorized", ""},
		{"unknown token", "frt_nope", `{"load":1}`, 401, "unauthorized", ""},
		{"malformed", r.Token, `{"load":`, 400, "invalid_json", "body"},
		{"not json", r.Token, `load=1`, 400, "invalid_json", "body"},
		{"unknown field", r.Token, `{"load":1,"lod":2}`, 400, "invalid_json", "lod"},
		{"wrong type", r.Token, `{"load":"high"}`, 400, "invalid_json", "load"},
		{"negative load", r.Token, `{"load":-1}`, 400, "invalid_value", "load"},
		{"duplicate load", r.Token, `{"load":1,"load":2}`, 400, "invalid_json", "load"},
		{"duplicate metric", r.Token, `{"load":1,"metrics":{"cpu":0.1,"cpu":0.9}}`, 400, "invalid_json", "metrics.cpu"},
		{"duplicate client key", r.Token, `{"load":1,"clients":[{"id":"a","rate":1,"id":"b"}]}`, 400, "invalid_json", "clients[0].id"},
		{"client without id", r.Token, `{"load":1,"clients":[{"rate":1}]}`, 400, "invalid_value", "clients[0].id"},
		{"oversized", r.Token, `{"load":1,"clients":[` + strings.Repeat(`{"id":"c","rate":1},`, protocol.MaxReportBytes/20) + `{"id":"c","rate":1}]}`, 400, "invalid_json", "body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, e.call("POST", "/v1/report", tc.token, tc.body), tc.status, tc.code, tc.field)
		})
	}
	// Another scheme than Bearer is no token.
	wantError(t, e.call("POST", "/v1/report", "", `{"load":1}`, "Authorization", "Basic "+r.Token), 401, "unauthorized", "")
}
