package stats

import (
	"errors"
	"fmt"
	"math"
)

// ErrSingular is returned by OLS when the observations cannot determine
// all four coefficients: fewer than four of them, or X, Y and X·Y not
// varying independently (e.g. one X value only).
var ErrSingular = errors.New("stats: singular design")

// Observation is one cell of a load grid: X client processes, Y
// concurrent callers each, T the measured response time.
type Observation struct {
	X, Y, T float64
}

// Fit is the least-squares fit of T = β0 + β1·X + β2·Y + β3·X·Y, the
// model of Beekhuis's thesis §4.3.5 (experiment L), with its coefficient of
// determination. The JSON names are the bench's result fields.
type Fit struct {
	Beta0 float64 `json:"beta0"`
	Beta1 float64 `json:"beta1"`
	Beta2 float64 `json:"beta2"`
	Beta3 float64 `json:"beta3"`
	// R2 is 1 − residual sum of squares / total sum of squares about the
	// mean of T (1 when T is constant and fitted exactly).
	R2 float64 `json:"r2"`
}

// Predict returns the fitted T at x, y.
func (f Fit) Predict(x, y float64) float64 {
	return f.Beta0 + f.Beta1*x + f.Beta2*y + f.Beta3*x*y
}

// OLS fits T = β0 + β1·X + β2·Y + β3·X·Y to obs by ordinary least squares.
// It solves the problem by Householder QR of the design matrix rather
// than the normal equations, whose condition number is the square of the
// design's. It returns ErrSingular (wrapped) when a column of the design
// is, to rounding, a combination of the others.
func OLS(obs []Observation) (Fit, error) {
	const p = 4
	n := len(obs)
	if n < p {
		return Fit{}, fmt.Errorf("%w: %d observations for %d coefficients", ErrSingular, n, p)
	}
	// a is the n×p design, column-major; b is T.
	a := make([][]float64, p)
	for j := range a {
		a[j] = make([]float64, n)
	}
	b := make([]float64, n)
	for i, o := range obs {
		if !finite(o.X) || !finite(o.Y) || !finite(o.T) {
			return Fit{}, fmt.Errorf("stats: observation %d is not finite: %+v", i, o)
		}
		a[0][i], a[1][i], a[2][i], a[3][i] = 1, o.X, o.Y, o.X*o.Y
		b[i] = o.T
	}
	colNorm := make([]float64, p)
	for j := range a {
		colNorm[j] = norm(a[j])
	}
	// Householder: for each column j, reflect rows j..n-1 so that a[j][j]
	// holds R's diagonal and the rows below are zero; apply the same
	// reflections to b.
	diag := make([]float64, p)
	for j := 0; j < p; j++ {
		alpha := norm(a[j][j:])
		if alpha <= 1e-10*colNorm[j] || alpha == 0 {
			return Fit{}, fmt.Errorf("%w: %s is determined by the other terms", ErrSingular, [...]string{"the constant", "X", "Y", "X·Y"}[j])
		}
		if a[j][j] > 0 {
			alpha = -alpha
		}
		// v = a[j][j:] − alpha·e1, stored in place.
		a[j][j] -= alpha
		vv := dot(a[j][j:], a[j][j:])
		for k := j + 1; k < p; k++ {
			s := 2 * dot(a[j][j:], a[k][j:]) / vv
			for i := j; i < n; i++ {
				a[k][i] -= s * a[j][i]
			}
		}
		s := 2 * dot(a[j][j:], b[j:]) / vv
		for i := j; i < n; i++ {
			b[i] -= s * a[j][i]
		}
		diag[j] = alpha
	}
	// Back substitution: R·β = (Qᵀb)[0:p]; R's off-diagonal entries are
	// a[k][j] for k > j.
	var beta [p]float64
	for j := p - 1; j >= 0; j-- {
		s := b[j]
		for k := j + 1; k < p; k++ {
			s -= a[k][j] * beta[k]
		}
		beta[j] = s / diag[j]
	}
	f := Fit{Beta0: beta[0], Beta1: beta[1], Beta2: beta[2], Beta3: beta[3]}
	mean := 0.0
	for _, o := range obs {
		mean += o.T
	}
	mean /= float64(n)
	ssRes, ssTot := 0.0, 0.0
	for _, o := range obs {
		r := o.T - f.Predict(o.X, o.Y)
		ssRes += r * r
		ssTot += (o.T - mean) * (o.T - mean)
	}
	switch {
	case ssTot > 0:
		f.R2 = 1 - ssRes/ssTot
	case ssRes <= 1e-18*max(1, mean*mean)*float64(n):
		f.R2 = 1
	}
	return f, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func dot(x, y []float64) float64 {
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func norm(x []float64) float64 {
	// Scaled to avoid overflow on large response times squared.
	scale := 0.0
	for _, v := range x {
		scale = max(scale, math.Abs(v))
	}
	if scale == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += (v / scale) * (v / scale)
	}
	return scale * math.Sqrt(s)
}

// Line is the least-squares line y = Intercept + Slope·x.
type Line struct {
	Intercept, Slope float64
}

// At returns the line's y at x.
func (l Line) At(x float64) float64 { return l.Intercept + l.Slope*x }

// FitLine fits y = a + b·x to the pairs (xs[i], ys[i]) by least squares.
// It returns ErrSingular (wrapped) when the xs do not vary or there are
// fewer than two pairs, and an error when the slices differ in length or
// hold a value that is not finite.
func FitLine(xs, ys []float64) (Line, error) {
	if len(xs) != len(ys) {
		return Line{}, fmt.Errorf("stats: %d x values for %d y values", len(xs), len(ys))
	}
	if len(xs) < 2 {
		return Line{}, fmt.Errorf("%w: %d points for a line", ErrSingular, len(xs))
	}
	for i := range xs {
		if !finite(xs[i]) || !finite(ys[i]) {
			return Line{}, fmt.Errorf("stats: point %d is not finite: (%v, %v)", i, xs[i], ys[i])
		}
	}
	mx, my := Mean(xs), Mean(ys)
	var sxx, sxy float64
	for i := range xs {
		dx := xs[i] - mx
		sxx += dx * dx
		sxy += dx * (ys[i] - my)
	}
	// Centred sums: a spread below rounding of the xs' size is no spread.
	if !(sxx > 0) || math.Sqrt(sxx/float64(len(xs))) <= 1e-12*math.Max(math.Abs(mx), 1) {
		return Line{}, fmt.Errorf("%w: every x is %v", ErrSingular, mx)
	}
	b := sxy / sxx
	return Line{Intercept: my - b*mx, Slope: b}, nil
}
