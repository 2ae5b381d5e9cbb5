package stats

// LittlesLaw checks a closed-loop run against Little's law, L = λ·W: with
// concurrency callers always in a call (zero think time) and throughput
// calls/s, the mean response time must be concurrency ÷ throughput. It
// returns that prediction in µs and the relative residual (measured −
// predicted) ÷ predicted of meanLatencyUS; a residual far from 0 means the
// callers were not all busy (start-up, think time, client saturation) or
// the figures are wrong. Both are 0 when throughput or concurrency is not
// positive.
func LittlesLaw(concurrency, throughputRPS, meanLatencyUS float64) (predictedUS, residual float64) {
	if !(throughputRPS > 0) || !(concurrency > 0) {
		return 0, 0
	}
	predictedUS = concurrency / throughputRPS * 1e6
	return predictedUS, (meanLatencyUS - predictedUS) / predictedUS
}
