package frontdoor

import (
	"testing"
	"time"
)

// within reports whether got is within 12.5% of want.
func within(got, want time.Duration) bool {
	d := float64(got - want)
	return d <= 0.125*float64(want) && d >= -0.125*float64(want)
}

func TestCallWindowRateAndQuantiles(t *testing.T) {
	t.Parallel()
	var w CallWindow
	t0 := time.Unix(1_000_000, 0)
	if st := w.Stats(t0); !st.RPSKnown || st.RPS != 0 || st.Answered != 0 {
		t.Fatalf("no call yet: %+v, want a known rate of 0 and no latencies", st)
	}
	// 20 calls a second for 4 seconds: 90% take 2ms, 10% take 80ms;
	// one failed attempt a second counts as a call, not a latency.
	for sec := range 4 {
		at := t0.Add(time.Duration(sec)*time.Second + 100*time.Millisecond)
		for i := range 20 {
			lat := 2 * time.Millisecond
			if i%10 == 0 {
				lat = 80 * time.Millisecond
			}
			w.Record(at, lat, true)
		}
		w.Record(at, time.Second, false)
	}
	if st := w.Stats(t0.Add(500 * time.Millisecond)); st.RPSKnown {
		t.Errorf("within the first second: %+v, want the rate unknown", st)
	}
	st := w.Stats(t0.Add(4*time.Second + 300*time.Millisecond))
	if !st.RPSKnown || st.RPS != 21 {
		t.Errorf("rps = %v (known %v), want 21", st.RPS, st.RPSKnown)
	}
	if st.Answered != 80 {
		t.Errorf("answered = %d, want 80", st.Answered)
	}
	if !within(st.P50, 2*time.Millisecond) || !within(st.P99, 80*time.Millisecond) {
		t.Errorf("p50 %v, p99 %v, want about 2ms and 80ms", st.P50, st.P99)
	}
	// The current second does not count; seconds older than the window
	// fall out.
	at := t0.Add(4*time.Second + 400*time.Millisecond)
	w.Record(at, 500*time.Millisecond, true)
	if st := w.Stats(at); st.RPS != 21 || st.Answered != 80 {
		t.Errorf("with a call this second: rps %v answered %d, want 21 and 80", st.RPS, st.Answered)
	}
	late := t0.Add(StatsWindow + 4*time.Second)
	st = w.Stats(late)
	if st.RPS != 0.1 || st.Answered != 1 || !within(st.P99, 500*time.Millisecond) {
		t.Errorf("10s later: %+v, want rps 0.1 and the one 500ms call", st)
	}
	if st := w.Stats(t0.Add(time.Hour)); st.RPS != 0 || st.Answered != 0 {
		t.Errorf("an hour later: %+v, want nothing", st)
	}
	// A slot reused for a new second starts from zero.
	w.Record(t0.Add(time.Hour), time.Millisecond, true)
	if st := w.Stats(t0.Add(time.Hour + time.Second)); st.RPS != 0.1 || st.Answered != 1 {
		t.Errorf("after reuse: %+v, want the one new call only", st)
	}
}

func TestCallWindowRecordDoesNotAllocate(t *testing.T) {
	var w CallWindow
	now := time.Unix(1_000_000, 0)
	if n := testing.AllocsPerRun(100, func() { w.Record(now, time.Millisecond, true); now = now.Add(300 * time.Millisecond) }); n != 0 {
		t.Errorf("Record allocates %v times per call, want 0", n)
	}
}
