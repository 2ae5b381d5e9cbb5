package stats

import "testing"

func TestBalanced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rates []float64
		want  bool
	}{
		{"equal", []float64{150, 150, 150, 150}, true},
		{"within 10%", []float64{140, 160, 150, 150}, true},
		{"on the edge", []float64{135, 165, 150, 150}, true},
		{"just outside", []float64{134, 166, 150, 150}, false},
		{"one outside", []float64{200, 100, 150, 150}, false},
		{"idle", []float64{0, 0, 0, 0}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Balanced(tt.rates, 0.10); got != tt.want {
				t.Errorf("Balanced(%v) = %v, want %v", tt.rates, got, tt.want)
			}
		})
	}
}

func TestFindEquilibrium(t *testing.T) {
	t.Parallel()
	ok := []float64{150, 150, 150, 150}
	bad := []float64{200, 100, 200, 100}
	tests := []struct {
		name   string
		rates  [][]float64
		window int
		want   int
	}{
		{"balanced from the start", [][]float64{ok, ok, ok, ok, ok}, 5, 0},
		{"too short", [][]float64{ok, ok, ok, ok}, 5, -1},
		{"never", [][]float64{bad, bad, bad, bad, bad, bad}, 5, -1},
		{"broken run restarts", [][]float64{bad, ok, ok, bad, ok, ok, ok, ok, ok, bad}, 5, 4},
		{"first of two windows", [][]float64{bad, ok, ok, ok, bad, ok, ok, ok, ok}, 3, 1},
		{"idle second breaks it", [][]float64{ok, ok, {0, 0, 0, 0}, ok, ok}, 2, 0},
		{"idle second breaks it later", [][]float64{ok, {0, 0, 0, 0}, ok, ok}, 2, 2},
		{"window of one", [][]float64{bad, ok}, 1, 1},
		{"no seconds", nil, 5, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := FindEquilibrium(tt.rates, DefaultBand, tt.window); got != tt.want {
				t.Errorf("FindEquilibrium = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEquilibriumStream(t *testing.T) {
	t.Parallel()
	e := NewEquilibrium(0.10, 3)
	seq := [][]float64{
		{300, 0, 150, 150},   // 0 unbalanced
		{150, 150, 150, 150}, // 1 run starts
		{150, 150, 200, 100}, // 2 breaks it
		{150, 150, 150, 150}, // 3 run starts
		{145, 155, 150, 150}, // 4
		{150, 150, 150, 150}, // 5 window complete
	}
	for i, rates := range seq {
		done, began := e.Add(rates)
		if want := i == 5; done != want {
			t.Fatalf("second %d: done = %v, want %v", i, done, want)
		}
		if done && began != 3 {
			t.Fatalf("window began at %d, want 3", began)
		}
	}
}
