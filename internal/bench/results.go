package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// Results is what an experiment measured: results.json, whose schema
// other tools read —
//
//	{"experiment": "overhead", "command": "fulcrum bench overhead --quick",
//	 "started": "RFC3339", "machine": {"cpus", "os", "go", "haproxy", "nginx"},
//	 "rows": [...], ...Extra}
//
// — and the report.
type Results struct {
	// Experiment, Command, Started and Machine are filled in by Run.
	Experiment string
	Command    string
	Started    time.Time
	Machine    Machine
	// Rows is a slice of the experiment's row structs (each with a
	// "name" and, for measured configurations, the Figures fields).
	Rows any
	// Extra holds further top-level members, e.g. scalability's
	// "regression". They follow "rows", by name.
	Extra map[string]any
	// Report is written as report.md. Not part of results.json.
	Report *Report
}

// Figures are the measured figures of one configuration, as they appear
// in a results row: calls, throughput_rps, latency_{mean,p5,p50,p95,p99,
// max}_us, jitter_us and errors (calls that failed, not in the latency
// figures).
type Figures struct {
	stats.Summary
	ThroughputRPS float64 `json:"throughput_rps"`
	Errors        int64   `json:"errors"`
}

// FiguresOf summarises a load run.
func FiguresOf(l LoadResult) Figures {
	f := Figures{Summary: l.Rec.Summary(), Errors: l.Errors}
	if l.Elapsed > 0 {
		f.ThroughputRPS = float64(l.Rec.Count()) / l.Elapsed.Seconds()
	}
	return f
}

// MarshalJSON writes the members in the schema's order.
func (r *Results) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	member := func(key string, v any) error {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("bench: results member %s: %w", key, err)
		}
		buf.Write(b)
		return nil
	}
	rows := r.Rows
	if rows == nil {
		rows = []any{}
	}
	for _, m := range []struct {
		k string
		v any
	}{
		{"experiment", r.Experiment},
		{"command", r.Command},
		{"started", r.Started.Format(time.RFC3339)},
		{"machine", r.Machine},
		{"rows", rows},
	} {
		if err := member(m.k, m.v); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := member(k, r.Extra[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// WriteJSON writes r, indented, to path.
func (r *Results) WriteJSON(path string) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	return os.WriteFile(path, out.Bytes(), 0o644)
}
