package strategy

// MinimumDispersionName is the registered name of the minimum-dispersion
// strategy.
const MinimumDispersionName = "minimum-dispersion"

// MinimumDispersionConfig is minimum-dispersion's configuration. Loads are
// per unit of weight.
type MinimumDispersionConfig struct {
	// Dampening is d in the effective load L = d·L_prev + (1−d)·sample
	// (the TAO paper §3.3.4: "averages instantaneous load samples with older
	// load values"). Default 0.5, range [0,1).
	Dampening float64 `json:"dampening"`
	// Tolerance: every replica's load is kept between mean/Tolerance and
	// mean·Tolerance; picks are made at random among the replicas within
	// this factor of the least loaded; a plan is only issued when it
	// narrows the spread by more than Tolerance−1 of the mean. Default
	// 1.10 (±10%), range [1,10].
	Tolerance float64 `json:"tolerance"`
	// PerBalanceLoad is added to a replica's load each time it is picked,
	// until its next report. "auto" (default) or a number >= 0 in load
	// units (0: off); see LeastLoadedConfig.PerBalanceLoad.
	PerBalanceLoad AutoLoad `json:"per_balance_load"`
	// MinGain: once no replica is out of the tolerance band (or no plan
	// to bring one back was worth making), the group is still planned for
	// while the best set of moves lowers the CV of the effective loads by
	// at least MinGain, so that a mix that can be balanced better than the
	// band is. 0 turns it off. Default 0.01, range [0,1].
	MinGain float64 `json:"min_gain"`
}

var defaultMinimumDispersionConfig = MinimumDispersionConfig{
	Dampening:      0.5,
	Tolerance:      1.10,
	PerBalanceLoad: AutoLoad{Auto: true},
	MinGain:        0.01,
}

// minimumDispersion is the minimum dispersion strategy of the TAO paper (§3.3.3):
// "ensure load differences fall within a certain tolerance": the average
// load of the group is compared with each replica's (dampened) load and,
// when a replica is further from it than the tolerance, load is shifted to
// bring the difference back within it. fulcrum shifts it by a plan of
// moves (rebalance, PlanMoves) and picks the least loaded replica for new
// bindings, at random among near-ties (loadPicker).
type minimumDispersion struct {
	cfg MinimumDispersionConfig
	env Env
}

func init() {
	Register(Definition{
		Name:     MinimumDispersionName,
		Summary:  "keeps every replica's reported load within a tolerance of the group average, by planned moves",
		Build:    buildMinimumDispersion,
		Defaults: func() map[string]any { return ToParams(defaultMinimumDispersionConfig) },
	})
}

func buildMinimumDispersion(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultMinimumDispersionConfig
	if err := DecodeParams(MinimumDispersionName, params, &cfg); err != nil {
		return nil, err
	}
	const s = MinimumDispersionName
	if err := halfOpenParamIn(s, "dampening", cfg.Dampening, 0, 1); err != nil {
		return nil, err
	}
	if err := floatParamIn(s, "tolerance", cfg.Tolerance, 1, 10); err != nil {
		return nil, err
	}
	if err := cfg.PerBalanceLoad.validate(s, "per_balance_load"); err != nil {
		return nil, err
	}
	if err := floatParamIn(s, "min_gain", cfg.MinGain, 0, 1); err != nil {
		return nil, err
	}
	return &minimumDispersion{cfg: cfg, env: env.withDefaults()}, nil
}

func (*minimumDispersion) Name() string { return MinimumDispersionName }

// Dampening implements Adaptive.
func (s *minimumDispersion) Dampening() float64 { return s.cfg.Dampening }

func (s *minimumDispersion) Picker(replicas []*Replica) Picker {
	return newLoadPicker(replicas, loadPickerConfig{
		tolerance:  s.cfg.Tolerance,
		perBalance: s.cfg.PerBalanceLoad,
	}, s.env.Rand)
}

// Analyze implements Adaptive: the group is rebalanced when some replica
// is above mean·Tolerance or below mean/Tolerance, by the best plan that
// lowers the CV by MinGain (by rebalance's own, gated by the tolerance,
// when MinGain is 0 or no such plan exists). Otherwise, while a plan
// lowers the CV by MinGain, it is refined by tentative plans, which the
// analyzer carries out once they last.
func (s *minimumDispersion) Analyze(in *Analysis) Decision {
	tol := s.cfg.Tolerance
	d := rebalance(in, func(load, mean float64) bool {
		return load > mean*tol || load*tol < mean
	}, tol-1)
	if !(s.cfg.MinGain > 0) {
		return d
	}
	if len(d.Moves) > 0 {
		if r := refine(in, s.cfg.MinGain, false); len(r.Moves) > 0 {
			return r
		}
	}
	if len(d.High) > 0 {
		return d
	}
	return refine(in, s.cfg.MinGain, true)
}
