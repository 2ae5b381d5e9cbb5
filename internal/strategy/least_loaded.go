package strategy

// LeastLoadedName is the registered name of the least-loaded strategy.
const LeastLoadedName = "least-loaded"

// LeastLoadedConfig is least-loaded's configuration. Loads and thresholds
// are per unit of weight (the same as TAO's for weight 1).
type LeastLoadedConfig struct {
	// Dampening is d in the effective load L = d·L_prev + (1−d)·sample.
	// Default 0.5: a step change is 75% through after two reports and 94%
	// after four, which smooths the noise of rates measured over one
	// report interval without holding a real trend back for long.
	// Range [0,1).
	Dampening float64 `json:"dampening"`
	// Tolerance: picks are made at random among the replicas whose load
	// is within this factor of the least loaded, and a plan of moves is
	// only issued when it narrows the spread by more than Tolerance−1 of
	// the mean. Default 1.05, range [1,10].
	Tolerance float64 `json:"tolerance"`
	// PerBalanceLoad is added to a replica's load each time it is picked,
	// until its next report is published (the analyzer step after it), so that a burst of new bindings does not all
	// go to the replica that looked least loaded. "auto" (default): one
	// binding's load estimated as the reported load per client the reports
	// list (or a tenth of the mean replica load when they list none); or a
	// number >= 0 in load units (0: off).
	PerBalanceLoad AutoLoad `json:"per_balance_load"`
	// RejectThreshold: replicas whose load is above it get no new
	// bindings; when all are, picks fail with ErrNoReplica. Default 0
	// (off), >= 0.
	RejectThreshold float64 `json:"reject_threshold"`
	// CriticalThreshold: a replica whose load is above it is critical and
	// the group is rebalanced (TAO's absolute threshold). Default 0 (off),
	// >= 0.
	CriticalThreshold float64 `json:"critical_threshold"`
	// CriticalRelative: a replica whose load is above this factor of the
	// group's mean is critical and the group is rebalanced. Default 1.10,
	// the ±10% a balanced group is held to, so that an on-demand group with
	// default parameters keeps balanced (TAO's default of no critical
	// threshold never rebalances). 0 (off) or in [1,10].
	CriticalRelative float64 `json:"critical_relative"`
}

var defaultLeastLoadedConfig = LeastLoadedConfig{
	Dampening:        0.5,
	Tolerance:        1.05,
	PerBalanceLoad:   AutoLoad{Auto: true},
	CriticalRelative: 1.10,
}

// leastLoaded is TAO's LeastLoaded strategy in its later form (the TAO paper;
// TAO's LB_LeastLoaded): the analyzer keeps the effective load
//
//	L = d·L_prev + (1−d)·sample
//
// and a new binding goes to the replica with the least L + per-balance
// load, at random among those within the tolerance of the minimum and
// below the reject threshold (see loadPicker); before any report, at
// random. A replica above the critical threshold (absolute, or relative to
// the group mean) triggers a rebalance: fulcrum plans which clients to move
// where (rebalance, PlanMoves) instead of TAO's bare `high`.
type leastLoaded struct {
	cfg LeastLoadedConfig
	env Env
}

func init() {
	Register(Definition{
		Name:     LeastLoadedName,
		Summary:  "the least loaded replica by reported load, random among near-ties; plans moves when a replica is critical",
		Build:    buildLeastLoaded,
		Defaults: func() map[string]any { return ToParams(defaultLeastLoadedConfig) },
	})
}

func buildLeastLoaded(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultLeastLoadedConfig
	if err := DecodeParams(LeastLoadedName, params, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &leastLoaded{cfg: cfg, env: env.withDefaults()}, nil
}

func (c *LeastLoadedConfig) validate() error {
	const s = LeastLoadedName
	if err := halfOpenParamIn(s, "dampening", c.Dampening, 0, 1); err != nil {
		return err
	}
	if err := floatParamIn(s, "tolerance", c.Tolerance, 1, 10); err != nil {
		return err
	}
	if err := c.PerBalanceLoad.validate(s, "per_balance_load"); err != nil {
		return err
	}
	if err := nonNegParam(s, "reject_threshold", c.RejectThreshold); err != nil {
		return err
	}
	if err := nonNegParam(s, "critical_threshold", c.CriticalThreshold); err != nil {
		return err
	}
	if c.CriticalRelative != 0 && !(c.CriticalRelative >= 1 && c.CriticalRelative <= 10) {
		return &ParamError{Strategy: s, Field: "critical_relative", Value: c.CriticalRelative, Allowed: "must be 0 (off) or in [1,10]"}
	}
	return nil
}

func (*leastLoaded) Name() string { return LeastLoadedName }

// Dampening implements Adaptive.
func (s *leastLoaded) Dampening() float64 { return s.cfg.Dampening }

func (s *leastLoaded) Picker(replicas []*Replica) Picker {
	return newLoadPicker(replicas, loadPickerConfig{
		tolerance:  s.cfg.Tolerance,
		reject:     s.cfg.RejectThreshold,
		perBalance: s.cfg.PerBalanceLoad,
	}, s.env.Rand)
}

// Analyze implements Adaptive.
func (s *leastLoaded) Analyze(in *Analysis) Decision {
	abs, rel := s.cfg.CriticalThreshold, s.cfg.CriticalRelative
	return rebalance(in, func(load, mean float64) bool {
		return (abs > 0 && load > abs) || (rel > 0 && load > rel*mean)
	}, s.cfg.Tolerance-1)
}
