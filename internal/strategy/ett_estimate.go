package strategy

// Estimator is implemented by strategies that can price a call by its path
// alone, before any replica is chosen (ett). The work-flow executor takes
// the estimate as a task's computation cost when the request gives none.
type Estimator interface {
	// EstimateMS is a call to path's estimated time in milliseconds on
	// an idle replica. Safe for concurrent use.
	EstimateMS(path string) float64
}

// EstimateMS is eq. 1 with no load on a replica of weight 1 that
// Capacities does not list: (cc(n)/P + d(n)/W)·1000, with cc(n) and d(n)
// the costs Paths gives path (CPUCost and DataCost when none does), P
// and W the CPUCapacity and BWCapacity (seconds of a reference core and
// bytes by default, hence milliseconds).
func (s *ett) EstimateMS(path string) float64 {
	cpu, data := s.cost(&Request{Path: path})
	return (cpu/s.cfg.CPUCapacity + data/s.cfg.BWCapacity) * 1000
}

// EstimatorOf returns s's Estimator, or ett's with its defaults (a
// millisecond per call) when s does not price calls.
func EstimatorOf(s Strategy) Estimator {
	if e, ok := s.(Estimator); ok {
		return e
	}
	def, err := buildETT(nil, Env{})
	if err != nil {
		panic("strategy: ett's defaults do not build: " + err.Error()) // a broken default is a programming error
	}
	return def.(Estimator)
}
