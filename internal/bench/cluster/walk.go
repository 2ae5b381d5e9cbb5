package cluster

import "math/rand/v2"

// walk is a simulated replica's load: a random walk in [0, 1] whose
// steps are normal with standard deviation sigma, reflected at the
// bounds. Not safe for concurrent use.
type walk struct {
	load  float64
	sigma float64
	rng   *rand.Rand
}

// newWalk starts a walk at a load drawn uniformly from [0, 1).
func newWalk(rng *rand.Rand, sigma float64) *walk {
	return &walk{load: rng.Float64(), sigma: sigma, rng: rng}
}

// next takes one step and returns the new load.
func (w *walk) next() float64 {
	w.load = reflect01(w.load + w.rng.NormFloat64()*w.sigma)
	return w.load
}

// reflect01 folds x into [0, 1] by reflecting it at 0 and 1.
func reflect01(x float64) float64 {
	for x < 0 || x > 1 {
		if x < 0 {
			x = -x
		}
		if x > 1 {
			x = 2 - x
		}
	}
	return x
}
