package compaction

import (
	"strings"
	"testing"
	"time"
)

// step is one call of Core.Step in a scenario: at (since the start), the
// view, and what it must decide; compacted, when set, is reported back.
type step struct {
	at        time.Duration
	view      View
	want      int64  // the revision to compact to; 0: none
	reason    string // part of the reason when want is 0
	compacted bool   // report the compaction back
	reset     bool   // Reset before the step
}

func view(current int64, needed map[string]int64, live ...string) View {
	return View{Live: live, Needed: needed, Current: current}
}

func TestCoreStep(t *testing.T) {
	t.Parallel()
	const p = 5 * time.Minute
	two := func(a, b int64) map[string]int64 { return map[string]int64{"a": a, "b": b} }
	for _, tc := range []struct {
		name   string
		period time.Duration
		steps  []step
	}{
		{"disabled", 0, []step{
			{at: 0, view: view(100, two(50, 60), "a", "b"), reason: "disabled"},
			{at: time.Hour, view: view(200, two(150, 160), "a", "b"), reason: "disabled"},
		}},
		{"compacts to what it captured a period before", p, []step{
			{at: 0, view: view(100, two(50, 60), "a", "b"), reason: "captured revision 50"},
			{at: p, view: view(200, two(150, 160), "a", "b"), want: 50, compacted: true},
			{at: 2 * p, view: view(300, two(250, 260), "a", "b"), want: 150, compacted: true},
		}},
		{"waits a whole period between captures", p, []step{
			{at: 0, view: view(100, two(50, 60), "a", "b")},
			{at: p - time.Second, view: view(200, two(150, 160), "a", "b"), reason: "under the period"},
			{at: p, view: view(210, two(170, 180), "a", "b"), want: 50},
		}},
		{"never above what is needed now", p, []step{
			{at: 0, view: view(100, two(90, 95), "a", "b")},
			// b started a watch that reads from 40 since.
			{at: p, view: view(200, two(150, 40), "a", "b"), want: 40, compacted: true},
			// Still needed, and compacted: nothing new.
			{at: 2 * p, view: view(300, two(250, 40), "a", "b"), reason: "compacted already (40)"},
			{at: 3 * p, view: view(400, two(350, 360), "a", "b"), reason: "compacted already"},
			{at: 4 * p, view: view(500, two(450, 460), "a", "b"), want: 350},
		}},
		{"a live instance that has not published blocks", p, []step{
			{at: 0, view: view(100, map[string]int64{"a": 50}, "a", "b"), reason: `instance "b" has not published`},
			{at: p, view: view(200, map[string]int64{"a": 150}, "a", "b"), reason: `instance "b" has not published`},
			// b publishes: the first capture, then a period on.
			{at: 2 * p, view: view(300, two(250, 260), "a", "b"), reason: "captured revision 250"},
			{at: 3 * p, view: view(400, two(350, 360), "a", "b"), want: 250},
		}},
		{"a published instance the directory does not list yet counts", p, []step{
			{at: 0, view: view(100, two(80, 30), "a")},
			{at: p, view: view(200, two(180, 30), "a"), want: 30},
		}},
		{"never above etcd's revision", p, []step{
			{at: 0, view: view(100, two(101, 101), "a", "b"), reason: "captured revision 100"},
			{at: p, view: view(103, two(104, 104), "a", "b"), want: 100},
		}},
		{"no instance at all: etcd's revision", p, []step{
			{at: 0, view: view(100, nil)},
			{at: p, view: view(120, nil), want: 100},
		}},
		{"not reported back: proposed again", p, []step{
			{at: 0, view: view(100, two(50, 60), "a", "b")},
			{at: p, view: view(200, two(150, 160), "a", "b"), want: 50},
			{at: 2 * p, view: view(300, two(250, 260), "a", "b"), want: 150},
		}},
		{"reset: captures again before compacting", p, []step{
			{at: 0, view: view(100, two(50, 60), "a", "b")},
			{at: p, view: view(200, two(150, 160), "a", "b"), want: 50, compacted: true},
			{at: 5 * p, reset: true, view: view(600, two(550, 560), "a", "b"), reason: "captured revision 550"},
			{at: 6 * p, view: view(700, two(650, 660), "a", "b"), want: 550},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewCore(tc.period)
			start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			for i, s := range tc.steps {
				if s.reset {
					c.Reset()
				}
				d := c.Step(start.Add(s.at), s.view)
				switch {
				case s.want != 0 && (!d.Compact || d.Rev != s.want):
					t.Fatalf("step %d (at %v): %+v, want compact to %d", i, s.at, d, s.want)
				case s.want == 0 && d.Compact:
					t.Fatalf("step %d (at %v): %+v, want no compaction", i, s.at, d)
				case s.want == 0 && (d.Reason == "" || !strings.Contains(d.Reason, s.reason)):
					t.Fatalf("step %d (at %v): reason %q, want one with %q", i, s.at, d.Reason, s.reason)
				}
				if s.compacted {
					c.Compacted(d.Rev)
					if c.Revision() != d.Rev {
						t.Fatalf("step %d: Revision %d after Compacted(%d)", i, c.Revision(), d.Rev)
					}
				}
			}
		})
	}
}
