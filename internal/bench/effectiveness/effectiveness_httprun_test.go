package effectiveness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// An HTTPRun that cannot run says why before it starts any client.
func TestHTTPRunRefuses(t *testing.T) {
	t.Parallel()
	doors := func(int) []string { return []string{"http://127.0.0.1:1"} }
	for _, tc := range []struct {
		name string
		run  HTTPRun
		want string
	}{
		{"short", HTTPRun{Rates: []float64{100}, Doors: doors, Replicas: []string{"r1"}, Duration: 900 * time.Millisecond}, "duration"},
		{"no clients", HTTPRun{Doors: doors, Replicas: []string{"r1"}, Duration: time.Second}, "no clients"},
		{"no doors", HTTPRun{Rates: []float64{100}, Replicas: []string{"r1"}, Duration: time.Second}, "no clients"},
		{"no replicas", HTTPRun{Rates: []float64{100}, Doors: doors, Duration: time.Second}, "no replicas"},
		{"a client without a door", HTTPRun{Rates: []float64{100}, Doors: func(int) []string { return nil }, Replicas: []string{"r1"}, Duration: time.Second}, "client 0 has no front door"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.run.Measure(context.Background(), bench.Smoke)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Measure: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// The start order HTTPRun's callers get is the experiment's.
func TestDefaultRatesInterleaved(t *testing.T) {
	t.Parallel()
	got := Interleave(DefaultRates())
	want := []float64{100, 50, 100, 50, 100, 50, 100, 50}
	if len(got) != len(want) {
		t.Fatalf("Interleave(DefaultRates()) = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Interleave(DefaultRates()) = %v, want %v", got, want)
		}
	}
}
