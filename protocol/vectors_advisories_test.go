package protocol_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// advisoryCase is one case of testdata/advisories.json. Behaviour cases
// (Steps) are run by the monitor package's tests.
type advisoryCase struct {
	Name     string  `json:"name"`
	Doc      string  `json:"doc"`
	Body     *string `json:"body"`
	Error    string  `json:"error"`
	Advisory *struct {
		Advisory         string   `json:"advisory"`
		Shed             float64  `json:"shed"`
		Term             string   `json:"term"`
		Epoch            string   `json:"epoch"`
		Clients          []string `json:"clients"`
		ReportIntervalMS float64  `json:"report_interval_ms"`
	} `json:"advisory"`
	Worker *protocol.Worker  `json:"worker"`
	Steps  []json.RawMessage `json:"steps"`
}

// TestVectorsAdvisories decodes every advisory body of
// testdata/advisories.json as the Go monitor does (encoding/json into an
// Advisory): a valid one must give the advisory listed, an invalid one
// must fail on the field given.
func TestVectorsAdvisories(t *testing.T) {
	t.Parallel()
	decodes := 0
	for _, tc := range vectortest.Load[advisoryCase](t, "advisories") {
		if tc.Body == nil {
			if len(tc.Steps) == 0 || tc.Error != "" || tc.Advisory != nil {
				t.Errorf("case %s: a behaviour case has steps and no body, error or advisory", tc.Name)
			}
			continue
		}
		decodes++
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if (tc.Error == "") == (tc.Advisory == nil) || len(tc.Steps) > 0 {
				t.Fatal("a decode case has a body and exactly one of error and advisory")
			}
			var got protocol.Advisory
			err := json.Unmarshal([]byte(*tc.Body), &got)
			if tc.Error != "" {
				if f := jsonErrorField(err, "report_interval"); f != tc.Error {
					t.Fatalf("error %v on field %q, want %q", err, f, tc.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.Advisory
			term, terr := strconv.ParseUint(want.Term, 10, 64)
			epoch, eerr := strconv.ParseUint(want.Epoch, 10, 64)
			if terr != nil || eerr != nil {
				t.Fatalf("term %q, epoch %q: must be decimal uint64s", want.Term, want.Epoch)
			}
			if got.Advisory != want.Advisory || got.Shed != want.Shed || got.Term != term || got.Epoch != epoch ||
				!slices.Equal(got.Clients, want.Clients) && len(got.Clients)+len(want.Clients) > 0 {
				t.Errorf("decoded %+v, want %+v", got, *want)
			}
			if ms := float64(got.ReportInterval.D()) / float64(time.Millisecond); math.Abs(ms-want.ReportIntervalMS) > 1e-9 {
				t.Errorf("report_interval %v, want %vms", got.ReportInterval, want.ReportIntervalMS)
			}
		})
	}
	if decodes == 0 {
		t.Fatal("no decode cases")
	}
}

// jsonErrorField is the field an encoding/json error names: "body" for a
// body that is not JSON or not an object, the member of a type error, and
// durationField for the error of a Duration (which names no field); ""
// for no error.
func jsonErrorField(err error, durationField string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return "body"
	case errors.As(err, &te):
		if te.Field == "" {
			return "body"
		}
		return te.Field
	case strings.Contains(err.Error(), "duration"):
		return durationField
	}
	return "(" + err.Error() + ")"
}
