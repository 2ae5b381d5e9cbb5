package protocol_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// registrationCase is one case of testdata/registrations.json. Request
// cases (Request) are run against a real balancer by internal/api's tests.
type registrationCase struct {
	Name        string          `json:"name"`
	Doc         string          `json:"doc"`
	Group       json.RawMessage `json:"group"`
	Before      []string        `json:"before"`
	Request     *string         `json:"request"`
	Status      int             `json:"status"`
	Code        string          `json:"code"`
	SameIDAs    *int            `json:"same_id_as"`
	SameTokenAs *int            `json:"same_token_as"`
	Answer      *string         `json:"answer"`
	Registered  *struct {
		ID               string  `json:"id"`
		Token            string  `json:"token"`
		FrontDoor        string  `json:"front_door"`
		ReportURL        string  `json:"report_url"`
		ReportIntervalMS float64 `json:"report_interval_ms"`
	} `json:"registered"`
	Error string `json:"error"`
}

// TestVectorsRegistrationAnswers decodes every registration answer of
// testdata/registrations.json as the Go monitor does (encoding/json into
// a Registered, then id and token required).
func TestVectorsRegistrationAnswers(t *testing.T) {
	t.Parallel()
	answers := 0
	for _, tc := range vectortest.Load[registrationCase](t, "registrations") {
		if tc.Answer == nil {
			if tc.Request == nil || tc.Status == 0 || tc.Group == nil || tc.Registered != nil {
				t.Errorf("case %s: a request case has group, request and status, and no registered", tc.Name)
			}
			continue
		}
		answers++
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if (tc.Error == "") == (tc.Registered == nil) || tc.Request != nil {
				t.Fatal("an answer case has exactly one of error and registered")
			}
			var got protocol.Registered
			field := jsonErrorField(json.Unmarshal([]byte(*tc.Answer), &got), "report_interval")
			switch {
			case field != "":
			case got.ID == "":
				field = "id"
			case got.Token == "":
				field = "token"
			}
			if tc.Error != "" {
				if field != tc.Error {
					t.Fatalf("error on field %q, want %q", field, tc.Error)
				}
				return
			}
			if field != "" {
				t.Fatalf("error on field %q", field)
			}
			want := tc.Registered
			if got.ID != want.ID || got.Token != want.Token || got.FrontDoor != want.FrontDoor || got.ReportURL != want.ReportURL {
				t.Errorf("decoded %+v, want %+v", got, *want)
			}
			if ms := float64(got.ReportInterval.D()) / float64(time.Millisecond); math.Abs(ms-want.ReportIntervalMS) > 1e-9 {
				t.Errorf("report_interval %v, want %vms", got.ReportInterval, want.ReportIntervalMS)
			}
		})
	}
	if answers == 0 {
		t.Fatal("no answer cases")
	}
}
