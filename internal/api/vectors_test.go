package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
)

// TestVectorsRegistrations sends every request case of
// protocol/testdata/registrations.json (shared with the Python tests; see
// protocol/testdata/README.md) to a real balancer's admin API, each in a
// fresh group: the answer's status, error code and field must be the
// case's, and a join or replace must keep the id (and token) it names.
func TestVectorsRegistrations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	ran := 0
	for n, raw := range vectortest.Cases(t, "registrations") {
		var tc struct {
			Name        string         `json:"name"`
			Group       map[string]any `json:"group"`
			Before      []string       `json:"before"`
			Request     *string        `json:"request"`
			Status      int            `json:"status"`
			Code        string         `json:"code"`
			Error       string         `json:"error"`
			SameIDAs    *int           `json:"same_id_as"`
			SameTokenAs *int           `json:"same_token_as"`
		}
		if err := json.Unmarshal(raw, &tc); err != nil {
			t.Fatal(err)
		}
		if tc.Request == nil {
			continue // an answer case: the protocol package's
		}
		ran++
		t.Run(tc.Name, func(t *testing.T) {
			name := fmt.Sprintf("vec%d", n)
			want(t, e.call("PUT", "/v1/groups/"+name, "", group(tc.Group)), http.StatusCreated)
			path := "/v1/groups/" + name + "/replicas"
			var before []registered
			for i, body := range tc.Before {
				a := e.call("POST", path, "", body, "Content-Type", "application/json")
				if a.status != http.StatusCreated && a.status != http.StatusOK {
					t.Fatalf("before[%d]: status %d: %s", i, a.status, a.body)
				}
				var r registered
				a.decode(t, &r)
				before = append(before, r)
			}
			a := e.call("POST", path, "", *tc.Request, "Content-Type", "application/json")
			if a.status != tc.Status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.Status, a.body)
			}
			if a.status >= 400 {
				ae := a.err(t)
				if tc.Code != "" && ae.Code != tc.Code || tc.Error != "" && ae.Field != tc.Error {
					t.Fatalf("error %s, want code %q field %q", bytes.TrimSpace(a.body), tc.Code, tc.Error)
				}
				return
			}
			var r registered
			a.decode(t, &r)
			if r.ID == "" || r.Token == "" {
				t.Fatalf("answer without id or token: %s", a.body)
			}
			if tc.SameIDAs != nil && r.ID != before[*tc.SameIDAs].ID {
				t.Errorf("id %s, want before[%d]'s %s", r.ID, *tc.SameIDAs, before[*tc.SameIDAs].ID)
			}
			if tc.SameTokenAs != nil && r.Token != before[*tc.SameTokenAs].Token {
				t.Errorf("token differs from before[%d]'s", *tc.SameTokenAs)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no request cases")
	}
}
