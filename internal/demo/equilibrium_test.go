package demo

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

func TestEquilibriumWindow(t *testing.T) {
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
