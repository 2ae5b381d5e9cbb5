package stats

import (
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func near(got, want, relTol float64) bool {
	if want == 0 {
		return math.Abs(got) <= relTol
	}
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

func TestRecorderUniform(t *testing.T) {
	t.Parallel()
	// 1..10000 µs once each: percentiles are known to the histogram's
	// precision, mean and jitter exactly.
	r := NewRecorder()
	for i := 1; i <= 10000; i++ {
		r.Record(time.Duration(i) * time.Microsecond)
	}
	s := r.Summary()
	n := 10000.0
	wantJitter := math.Sqrt((n*n - 1) / 12) // population sd of 1..n
	tests := []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"mean", s.Mean, 5000.5, 1e-12},
		{"jitter", s.Jitter, wantJitter, 1e-9},
		{"max", s.Max, 10000, 0},
		{"p5", s.P5, 500, 1e-3},
		{"p50", s.P50, 5000, 1e-3},
		{"p95", s.P95, 9500, 1e-3},
		{"p99", s.P99, 9900, 1e-3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !near(tt.got, tt.want, tt.tol) {
				t.Errorf("%s = %v, want %v (±%g)", tt.name, tt.got, tt.want, tt.tol)
			}
		})
	}
	if s.Count != 10000 {
		t.Errorf("count = %d, want 10000", s.Count)
	}
}

func TestRecorderClampsAndEmpty(t *testing.T) {
	t.Parallel()
	if s := NewRecorder().Summary(); s != (Summary{}) {
		t.Errorf("empty summary = %+v, want zero", s)
	}
	r := NewRecorder()
	r.Record(100 * time.Nanosecond) // below 1µs
	r.Record(-time.Second)          // a clock going backwards
	r.Record(2 * time.Minute)       // above 60s
	s := r.Summary()
	if s.Count != 3 || r.Clamped() != 1 {
		t.Fatalf("count %d clamped %d, want 3 and 1", s.Count, r.Clamped())
	}
	if s.Max != 60e6 {
		t.Errorf("max = %v µs, want 60e6 (clamped)", s.Max)
	}
	if s.P5 != 1 {
		t.Errorf("p5 = %v µs, want 1 (clamped up)", s.P5)
	}
	if s.P99 > s.Max {
		t.Errorf("p99 %v above max %v", s.P99, s.Max)
	}
}

func TestMergeEqualsOneRecorder(t *testing.T) {
	t.Parallel()
	// Per-goroutine recorders merged must summarise like one recorder
	// that saw every value.
	const workers, per = 8, 5000
	recs := make([]*Recorder, workers)
	all := NewRecorder()
	for w := range recs {
		recs[w] = NewRecorder()
		for i := 0; i < per; i++ {
			all.Record(latencyOf(w, i))
		}
	}
	var wg sync.WaitGroup
	for w, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				r.Record(latencyOf(w, i))
			}
		}()
	}
	wg.Wait()
	merged := Merge(recs...)
	got, want := merged.Summary(), all.Summary()
	if got.Count != want.Count || got.P5 != want.P5 || got.P50 != want.P50 || got.P95 != want.P95 ||
		got.P99 != want.P99 || got.Max != want.Max {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	if !near(got.Mean, want.Mean, 1e-12) || !near(got.Jitter, want.Jitter, 1e-9) {
		t.Errorf("merged mean/jitter %v/%v, want %v/%v", got.Mean, got.Jitter, want.Mean, want.Jitter)
	}
	// The inputs are unchanged.
	if c := recs[0].Count(); c != per {
		t.Errorf("merging changed an input: count %d", c)
	}
	// Merging nil and empty recorders is harmless.
	merged.Merge(nil)
	merged.Merge(NewRecorder())
	if merged.Summary() != got {
		t.Errorf("merging nothing changed the summary")
	}
}

// latencyOf is a deterministic spread of latencies from 1µs to ~2s.
func latencyOf(w, i int) time.Duration {
	return time.Duration(1+(w*7919+i*104729)%2_000_000) * time.Microsecond
}

func TestRecorderJSONRoundTrip(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	for i := 0; i < 20000; i++ {
		r.Record(latencyOf(3, i))
	}
	r.Record(90 * time.Second) // clamped
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Recorder
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Summary(), r.Summary(); got != want {
		t.Errorf("decoded summary %+v, want %+v", got, want)
	}
	if back.Clamped() != 1 {
		t.Errorf("clamped = %d, want 1", back.Clamped())
	}
	// A decoded recorder merges like the original.
	a, c := Merge(r, r), Merge(&back, r)
	if a.Summary() != c.Summary() {
		t.Errorf("merge of decoded %+v, want %+v", c.Summary(), a.Summary())
	}
	// An empty recorder round-trips too.
	b, err = json.Marshal(NewRecorder())
	if err != nil {
		t.Fatal(err)
	}
	var empty Recorder
	if err := json.Unmarshal(b, &empty); err != nil || empty.Count() != 0 {
		t.Fatalf("empty round trip: %v, count %d", err, empty.Count())
	}
	empty.Record(time.Millisecond)
	if empty.Summary().Mean != 1000 {
		t.Errorf("recording into a decoded empty recorder: mean %v", empty.Summary().Mean)
	}
}

func TestRecorderJSONRejects(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	r.Record(time.Millisecond)
	good, _ := json.Marshal(r)
	var w map[string]any
	_ = json.Unmarshal(good, &w)
	other := hdrhistogram.New(1, 1000, 2)
	otherHDR, _ := other.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	tests := []struct {
		name  string
		patch map[string]any
	}{
		{"short", map[string]any{"hdr": "AAAA"}},
		{"not base64", map[string]any{"hdr": "!!!!!!!!!!!!!!!!!!"}},
		{"truncated", map[string]any{"hdr": w["hdr"].(string)[:16]}},
		{"other range", map[string]any{"hdr": string(otherHDR), "n": 0}},
		{"count mismatch", map[string]any{"n": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := map[string]any{}
			for k, v := range w {
				m[k] = v
			}
			for k, v := range tt.patch {
				m[k] = v
			}
			b, _ := json.Marshal(m)
			var back Recorder
			if err := json.Unmarshal(b, &back); err == nil {
				t.Errorf("decoded %s", b)
			}
		})
	}
}
