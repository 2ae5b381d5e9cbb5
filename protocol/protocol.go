// Package protocol holds fulcrum's wire contract: the HTTP headers of the
// binding protocol, the load report a monitor sends, the advisory the
// balancer answers with, the replica registration messages, and the admin
// API's shapes (a group's settings, Group; its live state, GroupStatus; a
// run-time change, GroupPatch; a persisted Replica). Every client and
// monitor library, in any language, speaks exactly these shapes; API
// clients such as "fulcrum ctl" link this package and none of the
// server's. Defaults and validation of a Group are the server's
// (internal/registry).
//
// A monitor pushes a Report to POST /v1/report with
// "Authorization: Bearer <replica token>" and applies the Advisory it gets
// back; in pull mode the balancer GETs the monitor's URL, passing the current
// advisory in the Fulcrum-Advisory header, and reads a Report from the body.
package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Headers of the HTTP binding protocol (DESIGN.md "HTTP binding protocol").
const (
	// HeaderGroup names the group on a front door redirect.
	HeaderGroup = "Fulcrum-Group"
	// HeaderReplica names the chosen replica's id on a front door redirect.
	HeaderReplica = "Fulcrum-Replica"
	// HeaderBinding is sent by a bound client on calls straight to a
	// replica: "<group>/<replica-id>".
	HeaderBinding = "Fulcrum-Binding"
	// HeaderClient is a bound client's stable random id.
	HeaderClient = "Fulcrum-Client"
	// HeaderRebind is "1" on a replica's 307 that sends a client back to the
	// front door. A client that comes back to the front door because it
	// could not connect to its replica sends it with the value
	// RebindUnreachable, together with the Fulcrum-Binding it is leaving,
	// so that the front door does not bind it to that replica again.
	HeaderRebind = "Fulcrum-Rebind"
	// HeaderAdvisory carries the current advisory (JSON) on a pull request.
	HeaderAdvisory = "Fulcrum-Advisory"
	// HeaderProbe is "1" on the balancer's health probes, which monitors
	// do not count as calls (they are the balancer's, not a client's load).
	HeaderProbe = "Fulcrum-Probe"
	// HeaderCost is a call's cost hint for cost-aware strategies (ett):
	// "cpu=<work>, data=<bytes>", either part optional, in the units of
	// the group's capacities (a bare number is the cpu part).
	HeaderCost = "Fulcrum-Cost"
	// MaxClientIDLength bounds a Fulcrum-Client id.
	MaxClientIDLength = 128
)

// ProbePath is where a replica's monitor answers the balancer's load
// probes (strategy prequal): GET, answered 200 with a LoadProbe.
const ProbePath = "/fulcrum/probe"

// LoadProbe is the answer to a load probe: the replica's calls in flight
// now and its latency estimate (the median latency of its recent calls
// that started with about as many calls in flight).
type LoadProbe struct {
	RIF       int64   `json:"rif"`
	LatencyMS float64 `json:"latency_ms"`
}

// RebindUnreachable is the Fulcrum-Rebind value of a client whose replica
// refused its connection.
const RebindUnreachable = "unreachable"

// Advisory levels.
const (
	Nominal = "nominal"
	High    = "high"
	Drain   = "drain"
)

// MaxReportClients bounds the clients a report may list.
const MaxReportClients = 1024

// MaxReportBytes bounds the size of an encoded report.
const MaxReportBytes = 256 << 10

// Standard metric keys of a Report.
const (
	MetricInflight    = "inflight"
	MetricRPS         = "rps"
	MetricLatencyMS   = "latency_ms"
	MetricCPU         = "cpu"
	MetricUtilization = "utilization"
	MetricEPS         = "eps"
	MetricBW          = "bw"
	// MetricCPUOther is the share (0–1) of the replica's CPU capacity that
	// work other than the replica's server process took: the rest of its
	// cgroup, or of the host where no quota binds it.
	MetricCPUOther = "cpu_other"
	// MetricLatencyP50MS and MetricLatencyP99MS are the median and 99th
	// percentile latency (ms) of the calls that finished in the report
	// window; optional, each a finite number >= 0.
	MetricLatencyP50MS = "latency_p50_ms"
	MetricLatencyP99MS = "latency_p99_ms"
	// MetricBoundClients is the number of distinct bound clients the
	// replica serves now (the Go monitor: those that called in the report
	// window); optional, a whole number >= 0.
	MetricBoundClients = "bound_clients"
)

// ClientRate is one bound client and its call rate (calls/s) over the last
// report interval.
type ClientRate struct {
	ID   string  `json:"id"`
	Rate float64 `json:"rate"`
}

// Report is a monitor's load report. Load is an opaque magnitude in the
// group's unit; Metrics holds the standard keys above (and any others);
// Clients lists the busiest bound clients with their rates.
type Report struct {
	Load    float64            `json:"load"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Clients []ClientRate       `json:"clients,omitempty"`
	// Worker is set by each worker of a multi-process replica (the same
	// Worker it registered with); the balancer combines the latest report
	// of each worker (see Worker).
	Worker *Worker `json:"worker,omitempty"`
}

// Advisory is the balancer's answer to a report.
type Advisory struct {
	// Advisory is Nominal, High or Drain.
	Advisory string `json:"advisory"`
	// Shed is the amount of load (in the report's unit) to move away.
	Shed float64 `json:"shed"`
	// Term is the term of the balancer instance that advised: 0 on a
	// single node (in a cluster, the analyzer leader's election revision).
	// A monitor ignores an advisory whose term is below the highest it has
	// seen since it last registered.
	Term uint64 `json:"term"`
	// Epoch changes with every new advisory within a term; an advisory is
	// identified by (Term, Epoch), and a monitor sends each client back at
	// most once per advisory.
	Epoch uint64 `json:"epoch"`
	// Clients optionally names the bound clients to send back.
	Clients []string `json:"clients,omitempty"`
	// ReportInterval is the group's authoritative report interval.
	ReportInterval Duration `json:"report_interval"`
}

// FieldError is a validation failure of one field: which field, the value
// given and what is allowed.
type FieldError struct {
	Field   string
	Value   any
	Allowed string
	// Unknown marks a key that is not allowed at all (a strategy parameter
	// the strategy does not have); Value is then unused.
	Unknown bool
}

func (e *FieldError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("%s: unknown key, %s", e.Field, e.Allowed)
	}
	return fmt.Sprintf("%s: invalid value %s, %s", e.Field, formatValue(e.Value), e.Allowed)
}

func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "(missing)"
	default:
		return fmt.Sprint(v)
	}
}

// Validate checks a decoded report: finite, non-negative numbers, the
// load and client rates at most MaxLoad and MaxRate, share metrics (cpu,
// utilization, bw, cpu_other) in [0, MaxShare], bounded client list,
// client ids present.
func (r *Report) Validate() error {
	if !finiteNonNeg(r.Load) {
		return &FieldError{Field: "load", Value: r.Load, Allowed: "must be a finite number >= 0"}
	}
	for k, v := range r.Metrics {
		if k == "" {
			return &FieldError{Field: "metrics", Value: k, Allowed: "metric names must be non-empty"}
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &FieldError{Field: "metrics." + k, Value: v, Allowed: "must be a finite number"}
		}
	}
	if len(r.Clients) > MaxReportClients {
		return &FieldError{Field: "clients", Value: len(r.Clients), Allowed: fmt.Sprintf("at most %d clients", MaxReportClients)}
	}
	for i, c := range r.Clients {
		if c.ID == "" || len(c.ID) > MaxClientIDLength {
			return &FieldError{Field: fmt.Sprintf("clients[%d].id", i), Value: c.ID, Allowed: fmt.Sprintf("must be 1 to %d characters", MaxClientIDLength)}
		}
		if !finiteNonNeg(c.Rate) {
			return &FieldError{Field: fmt.Sprintf("clients[%d].rate", i), Value: c.Rate, Allowed: "must be a finite number >= 0"}
		}
	}
	if r.Worker != nil {
		if err := r.Worker.Validate(); err != nil {
			return err
		}
	}
	return r.checkBounds()
}

func finiteNonNeg(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// DecodeReport decodes and validates a JSON report (share metrics in
// (1, MaxShare] come back as 1): a single JSON object
// with a required "load" and optional "metrics", "clients" and "worker". Keys match
// exactly (no case folding), unknown keys are rejected, so that a typo in
// a monitor is caught, not ignored, and so is a key twice in one object
// (UniqueKeys). Errors are *FieldError naming the
// field by its path, such as "clients[3].rate".
func DecodeReport(data []byte) (Report, error) {
	if len(data) > MaxReportBytes {
		return Report{}, &FieldError{Field: "body", Value: len(data), Allowed: fmt.Sprintf("must be at most %d bytes", MaxReportBytes)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Report{}, bodyError(err)
	}
	if top == nil {
		return Report{}, &FieldError{Field: "body", Value: jsonText("null"), Allowed: "must be a JSON object"}
	}
	if err := UniqueKeys(data, false); err != nil {
		return Report{}, err
	}
	if err := knownKeys("", top, "load", "metrics", "clients", "worker"); err != nil {
		return Report{}, err
	}
	var r Report
	raw, ok := top["load"]
	if !ok {
		return Report{}, &FieldError{Field: "load", Value: nil, Allowed: "is required: a finite number >= 0"}
	}
	if err := decodeNumber("load", raw, &r.Load); err != nil {
		return Report{}, err
	}
	if raw, ok := top["metrics"]; ok {
		var ms map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ms); err != nil {
			return Report{}, &FieldError{Field: "metrics", Value: jsonText(raw), Allowed: "must be an object of metric names to numbers"}
		}
		if ms != nil {
			r.Metrics = make(map[string]float64, len(ms))
		}
		for _, k := range slices.Sorted(maps.Keys(ms)) { // the same error every time
			var v float64
			if err := decodeNumber("metrics."+k, ms[k], &v); err != nil {
				return Report{}, err
			}
			r.Metrics[k] = v
		}
	}
	if raw, ok := top["clients"]; ok {
		var cs []json.RawMessage
		if err := json.Unmarshal(raw, &cs); err != nil {
			return Report{}, &FieldError{Field: "clients", Value: jsonText(raw), Allowed: `must be a list of {"id", "rate"} objects`}
		}
		if len(cs) > MaxReportClients {
			return Report{}, &FieldError{Field: "clients", Value: len(cs), Allowed: fmt.Sprintf("at most %d clients", MaxReportClients)}
		}
		if cs != nil {
			r.Clients = make([]ClientRate, len(cs))
		}
		for i, raw := range cs {
			if err := decodeClient(fmt.Sprintf("clients[%d]", i), raw, &r.Clients[i]); err != nil {
				return Report{}, err
			}
		}
	}
	if raw, ok := top["worker"]; ok {
		w, err := DecodeWorker(raw)
		if err != nil {
			return Report{}, err
		}
		r.Worker = &w
	}
	if err := r.Validate(); err != nil {
		return Report{}, err
	}
	r.clampShares()
	return r, nil
}

// decodeClient decodes one entry of a report's clients.
func decodeClient(field string, raw json.RawMessage, c *ClientRate) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return &FieldError{Field: field, Value: jsonText(raw), Allowed: `must be an object {"id": "...", "rate": calls/s}`}
	}
	if err := knownKeys(field+".", obj, "id", "rate"); err != nil {
		return err
	}
	id, ok := obj["id"]
	if !ok {
		return &FieldError{Field: field + ".id", Value: nil, Allowed: "is required: a string of 1 to 128 characters"}
	}
	if err := json.Unmarshal(id, &c.ID); err != nil || string(id) == "null" {
		return &FieldError{Field: field + ".id", Value: jsonText(id), Allowed: "must be a string of 1 to 128 characters"}
	}
	rate, ok := obj["rate"]
	if !ok {
		return &FieldError{Field: field + ".rate", Value: nil, Allowed: "is required: a finite number >= 0"}
	}
	return decodeNumber(field+".rate", rate, &c.Rate)
}

// knownKeys rejects the first key of obj (in sorted order) not in known
// (the empty key named `""`).
func knownKeys(prefix string, obj map[string]json.RawMessage, known ...string) error {
	var unknown []string
	for k := range obj {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	name := unknown[0]
	if name == "" {
		name = `""` // named as UniqueKeys names it
	}
	return &FieldError{Field: prefix + name, Value: "unknown field", Allowed: "must be one of: " + strings.Join(known, ", ")}
}

// decodeNumber decodes a JSON number (not null, not a string) into v.
func decodeNumber(field string, raw json.RawMessage, v *float64) error {
	if err := json.Unmarshal(raw, v); err != nil || string(raw) == "null" {
		return &FieldError{Field: field, Value: jsonText(raw), Allowed: "must be a finite number"}
	}
	return nil
}

// bodyError turns an error decoding the whole body into a FieldError.
func bodyError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return &FieldError{Field: "body", Value: jsonText(te.Value), Allowed: "must be a JSON object"}
	case errors.As(err, &se):
		return &FieldError{Field: "body", Value: jsonText(fmt.Sprintf("(syntax error at offset %d)", se.Offset)), Allowed: "must be a single valid JSON object: " + se.Error()}
	}
	return &FieldError{Field: "body", Value: jsonText(err.Error()), Allowed: "must be a single valid JSON object"}
}

// jsonText is a piece of JSON shown as written in a FieldError (strings
// keep their quotes; long values are cut).
type jsonText string

func (t jsonText) String() string {
	const max = 64
	s := string(t)
	if len(s) > max {
		i := max
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "..."
	}
	return s
}

// Duration is a time.Duration written as a Go duration string ("500ms",
// "2s") in JSON and YAML.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string; null leaves d unchanged, as
// encoding/json does for other types.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"500ms\" or \"2s\", got %s", string(b))
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText and UnmarshalText make Duration work with YAML and flags.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDuration parses a non-negative Go duration string.
func ParseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: must be a Go duration such as \"500ms\" or \"2s\"", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	return Duration(v), nil
}
