package stats

import (
	"errors"
	"math"
	"testing"
)

// grid is Beekhuis's experiment L design: X processes × Y callers.
func grid(xs, ys []float64, f func(x, y float64) float64) []Observation {
	var obs []Observation
	for _, x := range xs {
		for _, y := range ys {
			obs = append(obs, Observation{X: x, Y: y, T: f(x, y)})
		}
	}
	return obs
}

func TestOLSRecoversExactCoefficients(t *testing.T) {
	t.Parallel()
	xs, ys := []float64{1, 2, 4}, []float64{1, 4, 16, 64}
	tests := []struct {
		name string
		want Fit
	}{
		{"all terms", Fit{Beta0: 120, Beta1: 35, Beta2: 8, Beta3: 2.5, R2: 1}},
		{"negative constant like Beekhuis's thesis", Fit{Beta0: -4.68, Beta1: 1.2, Beta2: 0.3, Beta3: 9.9, R2: 1}},
		{"no interaction", Fit{Beta0: 50, Beta1: 10, Beta2: 20, R2: 1}},
		{"large response times", Fit{Beta0: 3e6, Beta1: 2e5, Beta2: 7e4, Beta3: 1.5e4, R2: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := OLS(grid(xs, ys, tt.want.Predict))
			if err != nil {
				t.Fatal(err)
			}
			scale := math.Abs(tt.want.Beta0) + math.Abs(tt.want.Beta1) + math.Abs(tt.want.Beta2) + math.Abs(tt.want.Beta3)
			for i, pair := range [][2]float64{{got.Beta0, tt.want.Beta0}, {got.Beta1, tt.want.Beta1}, {got.Beta2, tt.want.Beta2}, {got.Beta3, tt.want.Beta3}} {
				if math.Abs(pair[0]-pair[1]) > 1e-9*scale {
					t.Errorf("beta%d = %v, want %v", i, pair[0], pair[1])
				}
			}
			if math.Abs(got.R2-1) > 1e-12 {
				t.Errorf("R² = %v, want 1", got.R2)
			}
		})
	}
}

func TestOLSNoisyFit(t *testing.T) {
	t.Parallel()
	// T = 10 + 2X + 3Y + XY + e with a known, balanced ±1 noise pattern:
	// hand-computed figures would be fragile, so check the properties
	// instead — coefficients near the truth, R² in (0.99, 1).
	noise := []float64{1, -1, -1, 1, -1, 1, 1, -1, 1, -1, -1, 1}
	obs := grid([]float64{1, 2, 4}, []float64{1, 4, 16, 64}, func(x, y float64) float64 { return 10 + 2*x + 3*y + x*y })
	for i := range obs {
		obs[i].T += noise[i]
	}
	f, err := OLS(obs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Beta3-1) > 0.05 || math.Abs(f.Beta2-3) > 0.2 || math.Abs(f.Beta1-2) > 1.5 || math.Abs(f.Beta0-10) > 3 {
		t.Errorf("fit %+v far from 10, 2, 3, 1", f)
	}
	if !(f.R2 > 0.99 && f.R2 < 1) {
		t.Errorf("R² = %v, want in (0.99, 1)", f.R2)
	}
	// R² by definition, from the residuals.
	mean, ssRes, ssTot := 0.0, 0.0, 0.0
	for _, o := range obs {
		mean += o.T / float64(len(obs))
	}
	for _, o := range obs {
		ssRes += math.Pow(o.T-f.Predict(o.X, o.Y), 2)
		ssTot += math.Pow(o.T-mean, 2)
	}
	if want := 1 - ssRes/ssTot; math.Abs(f.R2-want) > 1e-12 {
		t.Errorf("R² = %v, want %v", f.R2, want)
	}
}

func TestOLSSingular(t *testing.T) {
	t.Parallel()
	f := func(x, y float64) float64 { return 1 + x + y }
	tests := []struct {
		name string
		obs  []Observation
	}{
		{"no observations", nil},
		{"three observations", grid([]float64{1, 2, 4}, []float64{1}, f)},
		{"one X value", grid([]float64{2}, []float64{1, 4, 16, 64}, f)},
		{"one Y value", grid([]float64{1, 2, 4}, []float64{8}, f)},
		{"X equals Y", []Observation{{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}, {5, 5, 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := OLS(tt.obs); !errors.Is(err, ErrSingular) {
				t.Errorf("OLS = %v, want ErrSingular", err)
			}
		})
	}
	if _, err := OLS([]Observation{{1, 1, 1}, {2, 1, 2}, {1, 2, math.NaN()}, {2, 2, 4}}); err == nil {
		t.Errorf("OLS accepted a NaN")
	}
}

func TestLittlesLaw(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		conc, tput, mean      float64
		wantPred, wantResidue float64
	}{
		// 16 callers at 8000 calls/s: each call takes 2 ms.
		{"exact", 16, 8000, 2000, 2000, 0},
		{"measured 10% slow", 16, 8000, 2200, 2000, 0.1},
		{"measured 50% fast", 4, 1000, 2000, 4000, -0.5},
		{"no throughput", 4, 0, 2000, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pred, res := LittlesLaw(tt.conc, tt.tput, tt.mean)
			if math.Abs(pred-tt.wantPred) > 1e-9 || math.Abs(res-tt.wantResidue) > 1e-12 {
				t.Errorf("LittlesLaw = %v, %v; want %v, %v", pred, res, tt.wantPred, tt.wantResidue)
			}
		})
	}
}

func TestFitLine(t *testing.T) {
	t.Parallel()
	// Exact: y = 3 + 2x.
	l, err := FitLine([]float64{0, 1, 2, 5}, []float64{3, 5, 7, 13})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Intercept-3) > 1e-12 || math.Abs(l.Slope-2) > 1e-12 || math.Abs(l.At(10)-23) > 1e-12 {
		t.Errorf("FitLine = %+v, want 3 + 2x", l)
	}
	// Least squares through (0,0), (1,1), (2,1): slope 1/2, intercept 1/6.
	l, err = FitLine([]float64{0, 1, 2}, []float64{0, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Intercept-1.0/6) > 1e-12 || math.Abs(l.Slope-0.5) > 1e-12 {
		t.Errorf("FitLine = %+v, want 1/6 + x/2", l)
	}
	for _, bad := range []struct {
		name   string
		xs, ys []float64
		single bool
	}{
		{"no x spread", []float64{4, 4, 4}, []float64{1, 2, 3}, true},
		{"one point", []float64{1}, []float64{1}, true},
		{"none", nil, nil, true},
		{"lengths differ", []float64{1, 2}, []float64{1}, false},
		{"NaN", []float64{1, math.NaN()}, []float64{1, 2}, false},
		{"Inf", []float64{1, 2}, []float64{1, math.Inf(1)}, false},
	} {
		_, err := FitLine(bad.xs, bad.ys)
		if err == nil {
			t.Errorf("%s: no error", bad.name)
			continue
		}
		if errors.Is(err, ErrSingular) != bad.single {
			t.Errorf("%s: %v; ErrSingular %v, want %v", bad.name, err, errors.Is(err, ErrSingular), bad.single)
		}
	}
}
