package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDecodeReportGood(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want Report
	}{
		{"load only", `{"load": 12.5}`, Report{Load: 12.5}},
		{"zero load", `{"load": 0}`, Report{}},
		{"everything", `{"load": 3, "metrics": {"rps": 3, "cpu": 0.25, "custom": -1}, "clients": [{"id": "c1", "rate": 2}, {"id": "c2", "rate": 0}]}`,
			Report{Load: 3, Metrics: map[string]float64{"rps": 3, "cpu": 0.25, "custom": -1}, Clients: []ClientRate{{"c1", 2}, {"c2", 0}}}},
		{"null metrics and clients", `{"load": 1, "metrics": null, "clients": null}`, Report{Load: 1}},
		{"empty metrics and clients", `{"clients": [], "metrics": {}, "load": 1}`, Report{Load: 1, Metrics: map[string]float64{}, Clients: []ClientRate{}}},
		{"surrounding space", " \n{\"load\": 1}\n ", Report{Load: 1}},
		{"exponent", `{"load": 1e3}`, Report{Load: 1000}},
		{"status metrics", `{"load": 1, "metrics": {"latency_p50_ms": 0, "latency_p99_ms": 12.5, "bound_clients": 3}}`,
			Report{Load: 1, Metrics: map[string]float64{"latency_p50_ms": 0, "latency_p99_ms": 12.5, "bound_clients": 3}}},
		{"shares up to 1.5 clamped to 1", `{"load": 1, "metrics": {"cpu": 1.2, "utilization": 1.5, "bw": 1, "cpu_other": 0, "rps": 7}}`,
			Report{Load: 1, Metrics: map[string]float64{"cpu": 1, "utilization": 1, "bw": 1, "cpu_other": 0, "rps": 7}}},
		{"largest load and rate", `{"load": 1e12, "clients": [{"id": "c", "rate": 1e12}]}`, Report{Load: 1e12, Clients: []ClientRate{{"c", 1e12}}}},
		{"id of 128 bytes", `{"load": 1, "clients": [{"id": "` + strings.Repeat("x", 128) + `", "rate": 1}]}`,
			Report{Load: 1, Clients: []ClientRate{{strings.Repeat("x", 128), 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeReport([]byte(tc.in))
			if err != nil {
				t.Fatalf("DecodeReport(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeReport(%s) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeReportErrors(t *testing.T) {
	t.Parallel()
	tooLarge := `{"load": 1, "metrics": {"x": ` + strings.Repeat(" ", MaxReportBytes) + `1}}`
	manyClients := `{"load": 1, "clients": [` + strings.Repeat(`{"id":"c","rate":1},`, MaxReportClients) + `{"id":"c","rate":1}]}`
	tests := []struct {
		name  string
		in    string
		field string
		want  string // the whole message
	}{
		{"empty body", ``, "body", `body: invalid value (syntax error at offset 0), must be a single valid JSON object: unexpected end of JSON input`},
		{"truncated", `{"load": 1`, "body", `body: invalid value (syntax error at offset 10), must be a single valid JSON object: unexpected end of JSON input`},
		{"trailing object", `{"load": 1} {}`, "body", `body: invalid value (syntax error at offset 13), must be a single valid JSON object: invalid character '{' after top-level value`},
		{"trailing brace", `{"load": 1}}`, "body", `body: invalid value (syntax error at offset 12), must be a single valid JSON object: invalid character '}' after top-level value`},
		{"null", `null`, "body", `body: invalid value null, must be a JSON object`},
		{"array", `[{"load": 1}]`, "body", `body: invalid value array, must be a JSON object`},
		{"string", `"load"`, "body", `body: invalid value string, must be a JSON object`},
		{"too large", tooLarge, "body", fmt.Sprintf("body: invalid value %d, must be at most %d bytes", len(tooLarge), MaxReportBytes)},
		{"missing load", `{"metrics": {"rps": 1}}`, "load", `load: invalid value (missing), is required: a finite number >= 0`},
		{"load string", `{"load": "5"}`, "load", `load: invalid value "5", must be a finite number`},
		{"load null", `{"load": null}`, "load", `load: invalid value null, must be a finite number`},
		{"load negative", `{"load": -0.5}`, "load", `load: invalid value -0.5, must be a finite number >= 0`},
		{"load overflow", `{"load": 1e999}`, "load", `load: invalid value 1e999, must be a finite number`},
		{"load absurd", `{"load": 1e308}`, "load", `load: invalid value 1e+308, must be a finite number in [0, 1e+12]`},
		{"load above max", `{"load": 1.000001e12}`, "load", `load: invalid value 1.000001e+12, must be a finite number in [0, 1e+12]`},
		{"cpu far above 1", `{"load": 1, "metrics": {"cpu": 5}}`, "metrics.cpu", `metrics.cpu: invalid value 5, must be a share in [0, 1] (up to 1.5 is taken as 1)`},
		{"utilization above 1.5", `{"load": 1, "metrics": {"utilization": 1.51}}`, "metrics.utilization", `metrics.utilization: invalid value 1.51, must be a share in [0, 1] (up to 1.5 is taken as 1)`},
		{"bw negative", `{"load": 1, "metrics": {"bw": -0.01}}`, "metrics.bw", `metrics.bw: invalid value -0.01, must be a share in [0, 1] (up to 1.5 is taken as 1)`},
		{"cpu_other above 1.5", `{"load": 1, "metrics": {"cpu_other": 2}}`, "metrics.cpu_other", `metrics.cpu_other: invalid value 2, must be a share in [0, 1] (up to 1.5 is taken as 1)`},
		{"latency_p50_ms negative", `{"load": 1, "metrics": {"latency_p50_ms": -1}}`, "metrics.latency_p50_ms", `metrics.latency_p50_ms: invalid value -1, must be a latency in milliseconds in [0, 1e+08]`},
		{"latency_p99_ms absurd", `{"load": 1, "metrics": {"latency_p99_ms": 1e9}}`, "metrics.latency_p99_ms", `metrics.latency_p99_ms: invalid value 1e+09, must be a latency in milliseconds in [0, 1e+08]`},
		{"bound_clients fractional", `{"load": 1, "metrics": {"bound_clients": 2.5}}`, "metrics.bound_clients", `metrics.bound_clients: invalid value 2.5, must be a whole number of clients in [0, 1e+09]`},
		{"bound_clients negative", `{"load": 1, "metrics": {"bound_clients": -3}}`, "metrics.bound_clients", `metrics.bound_clients: invalid value -3, must be a whole number of clients in [0, 1e+09]`},
		{"first bad share by name", `{"load": 1, "metrics": {"utilization": 9, "cpu": 9, "bw": 9}}`, "metrics.bw", `metrics.bw: invalid value 9, must be a share in [0, 1] (up to 1.5 is taken as 1)`},
		{"client rate absurd", `{"load": 1, "clients": [{"id": "a", "rate": 1e300}]}`, "clients[0].rate", `clients[0].rate: invalid value 1e+300, must be a finite number of calls/s in [0, 1e+12]`},
		{"unknown key", `{"load": 1, "lod": 2}`, "lod", `lod: invalid value "unknown field", must be one of: load, metrics, clients, worker`},
		{"key case", `{"Load": 1}`, "Load", `Load: invalid value "unknown field", must be one of: load, metrics, clients, worker`},
		{"metrics not object", `{"load": 1, "metrics": [1]}`, "metrics", `metrics: invalid value [1], must be an object of metric names to numbers`},
		{"metric string", `{"load": 1, "metrics": {"cpu": "high"}}`, "metrics.cpu", `metrics.cpu: invalid value "high", must be a finite number`},
		{"metric empty name", `{"load": 1, "metrics": {"": 1}}`, "metrics", `metrics: invalid value "", metric names must be non-empty`},
		{"clients not list", `{"load": 1, "clients": {"id": "a"}}`, "clients", `clients: invalid value {"id": "a"}, must be a list of {"id", "rate"} objects`},
		{"too many clients", manyClients, "clients", `clients: invalid value 1025, at most 1024 clients`},
		{"client not object", `{"load": 1, "clients": ["a"]}`, "clients[0]", `clients[0]: invalid value "a", must be an object {"id": "...", "rate": calls/s}`},
		{"client null", `{"load": 1, "clients": [null]}`, "clients[0]", `clients[0]: invalid value null, must be an object {"id": "...", "rate": calls/s}`},
		{"client unknown key", `{"load": 1, "clients": [{"id": "a", "rate": 1}, {"id": "b", "rate": 1, "weight": 2}]}`, "clients[1].weight",
			`clients[1].weight: invalid value "unknown field", must be one of: id, rate`},
		{"client missing id", `{"load": 1, "clients": [{"rate": 1}]}`, "clients[0].id", `clients[0].id: invalid value (missing), is required: a string of 1 to 128 characters`},
		{"client id number", `{"load": 1, "clients": [{"id": 7, "rate": 1}]}`, "clients[0].id", `clients[0].id: invalid value 7, must be a string of 1 to 128 characters`},
		{"client id empty", `{"load": 1, "clients": [{"id": "", "rate": 1}]}`, "clients[0].id", `clients[0].id: invalid value "", must be 1 to 128 characters`},
		{"client id too long", `{"load": 1, "clients": [{"id": "` + strings.Repeat("x", 129) + `", "rate": 1}]}`, "clients[0].id",
			`clients[0].id: invalid value "` + strings.Repeat("x", 129) + `", must be 1 to 128 characters`},
		{"client missing rate", `{"load": 1, "clients": [{"id": "a"}]}`, "clients[0].rate", `clients[0].rate: invalid value (missing), is required: a finite number >= 0`},
		{"client rate string", `{"load": 1, "clients": [{"id": "a", "rate": "fast"}]}`, "clients[0].rate", `clients[0].rate: invalid value "fast", must be a finite number`},
		{"client rate negative", `{"load": 1, "clients": [{"id": "a", "rate": 1}, {"id": "b", "rate": -1}]}`, "clients[1].rate", `clients[1].rate: invalid value -1, must be a finite number >= 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := DecodeReport([]byte(tc.in))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeReport = %+v, %v; want a *FieldError", r, err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q", fe.Field, tc.field)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
			if !reflect.DeepEqual(r, Report{}) {
				t.Errorf("report on error = %+v, want zero", r)
			}
		})
	}
}

func TestReportValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		r     Report
		field string
	}{
		{"NaN load", Report{Load: math.NaN()}, "load"},
		{"infinite load", Report{Load: math.Inf(1)}, "load"},
		{"NaN metric", Report{Metrics: map[string]float64{"cpu": math.NaN()}}, "metrics.cpu"},
		{"infinite rate", Report{Clients: []ClientRate{{"a", math.Inf(1)}}}, "clients[0].rate"},
		{"too many clients", Report{Clients: make([]ClientRate, MaxReportClients+1)}, "clients"},
		{"load above max", Report{Load: MaxLoad * 2}, "load"},
		{"share above max", Report{Metrics: map[string]float64{"cpu": MaxShare + 0.1}}, "metrics.cpu"},
		{"rate above max", Report{Clients: []ClientRate{{"a", MaxRate * 2}}}, "clients[0].rate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var fe *FieldError
			if err := tc.r.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want a FieldError for %s", err, tc.field)
			}
		})
	}
	if err := (&Report{Load: 1, Metrics: map[string]float64{"x": -3}}).Validate(); err != nil {
		t.Fatalf("negative metric: %v; metrics need only be finite", err)
	}
}

// FuzzDecodeReport checks that DecodeReport never panics, that whatever it
// accepts passes Validate, and that encoding an accepted report and
// decoding it again is stable.
func FuzzDecodeReport(f *testing.F) {
	for _, seed := range []string{
		`{"load": 1}`,
		`{"load": 0.5, "metrics": {"rps": 10, "inflight": 2, "latency_ms": 3.5}}`,
		`{"load": 3, "clients": [{"id": "c1", "rate": 2.5}, {"id": "c2", "rate": 0}]}`,
		`{"load": 1, "metrics": null, "clients": []}`,
		`{"load": -1}`,
		`{"load": 1e400}`,
		`{"Load": 1}`,
		`{"load": 1}}`,
		`null`,
		`[]`,
		`{"load": 1, "clients": [{"id": "\u00e9\ud800", "rate": 1}]}`,
		`{"load":1,"load":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeReport(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is a %T, want *FieldError", err, err)
			}
			if !reflect.DeepEqual(r, Report{}) {
				t.Fatalf("report %+v returned with error %v", r, err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted report fails Validate: %v", err)
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal accepted report: %v", err)
		}
		if len(enc) > MaxReportBytes {
			// Escaping can grow a report past the limit (each '<' becomes
			// \u003c); such a report is not re-decodable by design.
			return
		}
		r2, err := DecodeReport(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		enc2, err := json.Marshal(r2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("unstable encoding:\n%s\n%s", enc, enc2)
		}
	})
}

func TestDuration(t *testing.T) {
	t.Parallel()
	type doc struct {
		D Duration `json:"d" yaml:"d"`
	}
	good := []struct {
		in   string
		want time.Duration
	}{{"500ms", 500 * time.Millisecond}, {"2s", 2 * time.Second}, {"1h30m", 90 * time.Minute}, {"0s", 0}}
	for _, tc := range good {
		var j doc
		if err := json.Unmarshal([]byte(`{"d":"`+tc.in+`"}`), &j); err != nil || j.D.D() != tc.want {
			t.Errorf("JSON %q: %v, %v", tc.in, j.D, err)
		}
		var y doc
		if err := yaml.Unmarshal([]byte("d: "+tc.in), &y); err != nil || y.D.D() != tc.want {
			t.Errorf("YAML %q: %v, %v", tc.in, y.D, err)
		}
		out, err := yaml.Marshal(y)
		if err != nil || strings.TrimSpace(string(out)) != "d: "+tc.want.String() {
			t.Errorf("YAML marshal of %v = %q, %v", tc.want, out, err)
		}
		out, err = json.Marshal(j)
		if err != nil || string(out) != `{"d":"`+tc.want.String()+`"}` {
			t.Errorf("JSON marshal of %v = %s, %v", tc.want, out, err)
		}
	}
	for _, in := range []string{"5 seconds", "5", "-1s", `""`} {
		var y doc
		if err := yaml.Unmarshal([]byte("d: "+in), &y); err == nil {
			t.Errorf("YAML %q accepted as %v", in, y.D)
		}
	}
	for _, in := range []string{`"5 seconds"`, `5`, `"-1s"`, `""`, `true`} {
		var j doc
		if err := json.Unmarshal([]byte(`{"d":`+in+`}`), &j); err == nil {
			t.Errorf("JSON %s accepted as %v", in, j.D)
		}
	}
	j := doc{D: Duration(time.Second)}
	if err := json.Unmarshal([]byte(`{"d":null}`), &j); err != nil || j.D.D() != time.Second {
		t.Errorf("JSON null: %v, %v; want it to leave the value alone", j.D, err)
	}
}
