package demo

import "math"

// Equilibrium watches per-second served rates and finds the first window
// of Window consecutive seconds in which every replica stayed within Band
// (a fraction: 0.10 is ±10%) of the mean of that second. Not safe for
// concurrent use.
type Equilibrium struct {
	// Band is the allowed relative deviation from the mean.
	Band float64
	// Window is the number of consecutive balanced seconds required.
	Window int

	second int
	start  int // first second of the current balanced run; -1 if none
}

// NewEquilibrium returns a detector for band and window.
func NewEquilibrium(band float64, window int) *Equilibrium {
	return &Equilibrium{Band: band, Window: window, start: -1}
}

// Balanced reports whether rates are all within the band of their mean.
// A second in which nothing was served is not balanced.
func Balanced(rates []float64, band float64) bool {
	if len(rates) == 0 {
		return false
	}
	mean := 0.0
	for _, r := range rates {
		mean += r
	}
	mean /= float64(len(rates))
	if mean <= 0 {
		return false
	}
	for _, r := range rates {
		if math.Abs(r-mean) > band*mean+1e-9 {
			return false
		}
	}
	return true
}

// Add records one second's rates (second n, counting from 0) and reports
// whether the window is complete, and the second it began.
func (e *Equilibrium) Add(rates []float64) (done bool, began int) {
	n := e.second
	e.second++
	if !Balanced(rates, e.Band) {
		e.start = -1
		return false, -1
	}
	if e.start < 0 {
		e.start = n
	}
	if n-e.start+1 >= e.Window {
		return true, e.start
	}
	return false, e.start
}
