package stats

import (
	"math"
	"testing"
)

func TestCV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"equal", []float64{150, 150, 150, 150}, 0},
		// Fig. 15's round-robin outcome: mean 150, sd 50.
		{"200/100/200/100", []float64{200, 100, 200, 100}, 1.0 / 3},
		{"2,4,4,4,5,5,7,9", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 2.0 / 5}, // sd 2, mean 5
		{"one value", []float64{42}, 0},
		{"all idle", []float64{0, 0, 0}, 0},
		{"none", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := CV(tt.values); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("CV(%v) = %v, want %v", tt.values, got, tt.want)
			}
		})
	}
}

func TestQuantiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
		q      float64
		want   float64
	}{
		{"median odd", []float64{3, 1, 2}, 0.5, 2},
		{"median even", []float64{4, 1, 3, 2}, 0.5, 2.5},
		{"min", []float64{5, 1, 9}, 0, 1},
		{"max", []float64{5, 1, 9}, 1, 9},
		{"p5 of 0..100", seq(0, 100), 0.05, 5},
		{"p95 of 0..100", seq(0, 100), 0.95, 95},
		{"interpolated", []float64{10, 20}, 0.25, 12.5},
		{"single", []float64{7}, 0.95, 7},
		{"none", nil, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]float64(nil), tt.values...)
			if got := Quantile(tt.values, tt.q); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tt.values, tt.q, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.values[i] {
					t.Fatalf("Quantile reordered its input")
				}
			}
		})
	}
	if got := Median([]float64{9, 1, 5, 3}); got != 4 {
		t.Errorf("Median = %v, want 4", got)
	}
}

func TestMeanBounds(t *testing.T) {
	t.Parallel()
	got := MeanBounds(seq(1, 21)) // 1..21: mean 11, p5 2, p95 20
	want := Bounds{N: 21, Mean: 11, Lower: 2, Upper: 20}
	if got != want {
		t.Errorf("MeanBounds(1..21) = %+v, want %+v", got, want)
	}
	if got := MeanBounds(nil); got != (Bounds{}) {
		t.Errorf("MeanBounds(nil) = %+v, want zero", got)
	}
}

func seq(from, to int) []float64 {
	var s []float64
	for i := to; i >= from; i-- { // descending: Quantile must sort
		s = append(s, float64(i))
	}
	return s
}
