package health

import "testing"

func TestActive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		rise, fall int
		results    string // '+' success, '-' failure
		want       string // state after each result: 'U' up, 'D' down
	}{
		{"stays up on success", 2, 3, "+++", "UUU"},
		{"falls after three failures", 2, 3, "---", "UUD"},
		{"a success breaks the failure streak", 2, 3, "--+--", "UUUUU"},
		{"rises after two successes", 2, 3, "---++", "UUDDU"},
		{"a failure breaks the success streak", 2, 3, "---+-++", "UUDDDDU"},
		{"rise and fall of one", 1, 1, "-+-+", "DUDU"},
		{"zero thresholds count as one", 0, 0, "-+", "DU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := NewActive(tc.rise, tc.fall)
			prev := a.State()
			for i, r := range tc.results {
				changed := a.Result(r == '+')
				want := map[byte]string{'U': Up, 'D': Down}[tc.want[i]]
				if got := a.State(); got != want {
					t.Fatalf("after result %d (%c): state %s, want %s", i, r, got, want)
				}
				if changed != (want != prev) {
					t.Fatalf("after result %d: changed = %v, state went %s -> %s", i, changed, prev, want)
				}
				prev = want
			}
		})
	}
}
