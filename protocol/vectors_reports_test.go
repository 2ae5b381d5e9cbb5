package protocol_test

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// reportCase is one case of testdata/reports.json.
type reportCase struct {
	Name   string  `json:"name"`
	Doc    string  `json:"doc"`
	Body   string  `json:"body"`
	Expand *expand `json:"expand"`
	PadTo  int     `json:"pad_to"`
	Error  string  `json:"error"`
	Report *struct {
		Load         float64               `json:"load"`
		Metrics      map[string]float64    `json:"metrics"`
		Clients      []protocol.ClientRate `json:"clients"`
		ClientsCount *int                  `json:"clients_count"`
		Worker       *protocol.Worker      `json:"worker"`
	} `json:"report"`
}

// TestVectorsReports decodes every report body of testdata/reports.json
// with DecodeReport: a valid one must decode to the report given, an
// invalid one must fail with a *FieldError on the field given.
func TestVectorsReports(t *testing.T) {
	t.Parallel()
	for _, tc := range vectortest.Load[reportCase](t, "reports") {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if (tc.Error == "") == (tc.Report == nil) {
				t.Fatal("a case has exactly one of error and report")
			}
			got, err := protocol.DecodeReport(buildBody(t, tc.Body, tc.Expand, tc.PadTo))
			if tc.Error != "" {
				var fe *protocol.FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("DecodeReport = %+v, %v; want a *FieldError on %q", got, err, tc.Error)
				}
				if fe.Field != tc.Error {
					t.Fatalf("error on field %q (%v), want %q", fe.Field, err, tc.Error)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeReport: %v", err)
			}
			want := tc.Report
			if got.Load != want.Load {
				t.Errorf("load = %v, want %v", got.Load, want.Load)
			}
			if !maps.Equal(got.Metrics, want.Metrics) && (len(got.Metrics) != 0 || len(want.Metrics) != 0) {
				t.Errorf("metrics = %v, want %v", got.Metrics, want.Metrics)
			}
			if want.ClientsCount != nil {
				if len(got.Clients) != *want.ClientsCount {
					t.Errorf("%d clients, want %d", len(got.Clients), *want.ClientsCount)
				}
			} else if len(got.Clients) != len(want.Clients) || (len(want.Clients) > 0 && !equalClients(got.Clients, want.Clients)) {
				t.Errorf("clients = %v, want %v", got.Clients, want.Clients)
			}
			if (got.Worker == nil) != (want.Worker == nil) || got.Worker != nil && *got.Worker != *want.Worker {
				t.Errorf("worker = %s, want %s", jsonOf(got.Worker), jsonOf(want.Worker))
			}
		})
	}
}

func equalClients(a, b []protocol.ClientRate) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
