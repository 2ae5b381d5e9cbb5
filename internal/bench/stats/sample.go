package stats

import (
	"math"
	"slices"
)

// Mean is the arithmetic mean of values; 0 when there are none.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range values {
		s += v
	}
	return s / float64(len(values))
}

// StdDev is the population standard deviation of values (divided by n,
// not n−1: the replicas of a group are the whole population); 0 when
// there are none.
func StdDev(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	m := Mean(values)
	s := 0.0
	for _, v := range values {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(values)))
}

// CV is the coefficient of variation of values: the population standard
// deviation over the mean. It is 0 when there are no values or their mean
// is not positive (an idle group is not called imbalanced).
func CV(values []float64) float64 {
	m := Mean(values)
	if !(m > 0) {
		return 0
	}
	return StdDev(values) / m
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of values, interpolating
// linearly between the closest ranks (Hyndman and Fan's type 7, the
// default of R and NumPy); 0 when there are none. values is not modified.
func Quantile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return quantileSorted(s, q)
}

func quantileSorted(s []float64, q float64) float64 {
	q = min(max(q, 0), 1)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// Median is the middle of values (the mean of the two middle ones for an
// even count); 0 when there are none. values is not modified.
func Median(values []float64) float64 { return Quantile(values, 0.5) }

// Bounds is a mean with its 5% lower and 95% upper bounds: the empirical
// 90% interval Beekhuis's thesis reports for every measurement (§3.4: "the mean,
// 5% lower-bound and 95% upper-bound limits").
type Bounds struct {
	N     int     `json:"n"`
	Mean  float64 `json:"mean"`
	Lower float64 `json:"p5"`
	Upper float64 `json:"p95"`
}

// MeanBounds returns the mean of values with their 5th and 95th
// percentiles (Quantile's interpolation) — for repeated runs of one
// configuration. All zero when there are no values.
func MeanBounds(values []float64) Bounds {
	if len(values) == 0 {
		return Bounds{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return Bounds{N: len(s), Mean: Mean(s), Lower: quantileSorted(s, 0.05), Upper: quantileSorted(s, 0.95)}
}
