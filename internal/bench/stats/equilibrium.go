package stats

import "math"

// The effectiveness experiment's definition of equilibrium (the TAO paper
// §4.3, Fig. 16): every replica within ±10% of the mean for 5 seconds.
const (
	DefaultBand   = 0.10
	DefaultWindow = 5
)

// Balanced reports whether every rate is within band (a fraction: 0.10 is
// ±10%) of the mean of rates. A second in which nothing was served, or no
// replica, is not balanced.
func Balanced(rates []float64, band float64) bool {
	if len(rates) == 0 {
		return false
	}
	m := Mean(rates)
	if !(m > 0) {
		return false
	}
	for _, r := range rates {
		// The small slack keeps a rate exactly on the edge inside.
		if math.Abs(r-m) > band*m+1e-9 {
			return false
		}
	}
	return true
}

// FindEquilibrium returns the first second of the first window of window
// consecutive seconds in which every replica stayed within band of that
// second's mean, or -1 if there is none. rates[t][i] is replica i's
// served rate in second t (from 0).
func FindEquilibrium(rates [][]float64, band float64, window int) int {
	e := NewEquilibrium(band, window)
	for _, r := range rates {
		if done, began := e.Add(r); done {
			return began
		}
	}
	return -1
}

// Equilibrium finds equilibrium as the seconds come: FindEquilibrium fed
// one second at a time, for a run that stops once it is reached. Not safe
// for concurrent use.
type Equilibrium struct {
	band   float64
	window int

	second int
	start  int // first second of the current balanced run; -1 if none
}

// NewEquilibrium returns a detector for band and window (at least 1
// second).
func NewEquilibrium(band float64, window int) *Equilibrium {
	return &Equilibrium{band: band, window: max(window, 1), start: -1}
}

// Add records the next second's rates (the first call is second 0) and
// reports whether a balanced window is complete and, if so, the second it
// began. Once complete, Add keeps reporting it while the run stays
// balanced.
func (e *Equilibrium) Add(rates []float64) (done bool, began int) {
	n := e.second
	e.second++
	if !Balanced(rates, e.band) {
		e.start = -1
		return false, -1
	}
	if e.start < 0 {
		e.start = n
	}
	if n-e.start+1 >= e.window {
		return true, e.start
	}
	return false, -1
}
