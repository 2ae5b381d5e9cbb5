// Package stats holds the statistics of fulcrum's benchmarks: latency
// recording in HDR histograms, summaries (mean, percentiles, jitter), the
// coefficient of variation of replica loads, equilibrium detection over
// per-second rates, mean with 5%/95% bounds of repeated runs (Beekhuis's thesis
// §3–4), the least-squares fit T = β0 + β1·X + β2·Y + β3·X·Y and a check of
// Little's law.
//
// It is pure: no I/O, no clocks. Callers measure, this package computes.
//
// A typical use, one recorder per load-generating goroutine merged at the
// end:
//
//	recs := make([]*stats.Recorder, workers)
//	for i := range recs {
//		recs[i] = stats.NewRecorder()
//		go func(r *stats.Recorder) { ...; r.Record(elapsed); ... }(recs[i])
//	}
//	wg.Wait()
//	sum := stats.Merge(recs...).Summary()
//	fmt.Println(sum.P99, sum.Jitter)
//
// A Recorder filled in another process travels as JSON (MarshalJSON,
// UnmarshalJSON) and merges exactly.
package stats
