package cluster

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestReflect01(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in, out float64
	}{
		{"inside", 0.25, 0.25},
		{"zero", 0, 0},
		{"one", 1, 1},
		{"below zero", -0.125, 0.125},
		{"above one", 1.25, 0.75},
		{"far below", -1.75, 0.25},
		{"far above", 3.5, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := reflect01(tc.in); math.Abs(got-tc.out) > 1e-12 {
				t.Errorf("reflect01(%v) = %v, want %v", tc.in, got, tc.out)
			}
		})
	}
}

// A walk stays in [0, 1], moves at every step, drifts (its steps have
// about the standard deviation asked for) and is the same for the same
// seed.
func TestWalk(t *testing.T) {
	t.Parallel()
	w := newWalk(rand.New(rand.NewPCG(7, 2026)), 0.05)
	again := newWalk(rand.New(rand.NewPCG(7, 2026)), 0.05)
	prev := w.load
	var sq float64
	const steps = 10_000
	for range steps {
		v := w.next()
		if v < 0 || v > 1 {
			t.Fatalf("load %v outside [0, 1]", v)
		}
		if v == prev {
			t.Fatalf("the walk did not move from %v", v)
		}
		if a := again.next(); a != v {
			t.Fatalf("the same seed walked to %v and %v", v, a)
		}
		sq += (v - prev) * (v - prev)
		prev = v
	}
	// Reflection shortens a few steps: the RMS step is a little under σ.
	if rms := math.Sqrt(sq / steps); rms < 0.045 || rms > 0.0505 {
		t.Errorf("RMS step %v, want about σ = 0.05", rms)
	}
}
