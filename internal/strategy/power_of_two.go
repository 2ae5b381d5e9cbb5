package strategy

import "math"

// PowerOfTwoName is the registered name of the power-of-two-choices
// strategy.
const PowerOfTwoName = "power-of-two"

// PowerOfTwoConfig is power-of-two's configuration.
type PowerOfTwoConfig struct {
	// Bias is how strongly calls in flight count against a replica when
	// weights differ: its effective weight is weight/(active+1)^bias.
	// 0 ignores load (the heavier of the two wins), 1 is Envoy's default.
	// Default 1, range [0,10].
	Bias float64 `json:"bias"`
}

var defaultPowerOfTwoConfig = PowerOfTwoConfig{Bias: 1}

// powerOfTwo draws two distinct replicas at random and takes the one with
// fewer calls in flight (Mitzenmacher's power of two choices; Envoy's
// LEAST_REQUEST with choice_count 2). When the weights differ it takes the
// one with the larger effective weight
//
//	weight / (active + 1)^bias
//
// (Envoy least-request load balancer, active_request_bias). Active is
// Replica.Inflight; a tie goes to the replica with fewer clients bound per
// unit of weight since its last report, which spreads an on-demand group
// whose calls the balancer does not see, then to the first drawn.
type powerOfTwo struct {
	cfg PowerOfTwoConfig
	env Env
}

func init() {
	Register(Definition{
		Name:     PowerOfTwoName,
		Summary:  "two random replicas, the one with fewer calls in flight (weight/(active+1)^bias when weights differ)",
		Build:    buildPowerOfTwo,
		Defaults: func() map[string]any { return ToParams(defaultPowerOfTwoConfig) },
	})
}

func buildPowerOfTwo(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultPowerOfTwoConfig
	if err := DecodeParams(PowerOfTwoName, params, &cfg); err != nil {
		return nil, err
	}
	if err := floatParamIn(PowerOfTwoName, "bias", cfg.Bias, 0, 10); err != nil {
		return nil, err
	}
	return &powerOfTwo{cfg: cfg, env: env.withDefaults()}, nil
}

func (*powerOfTwo) Name() string { return PowerOfTwoName }

func (s *powerOfTwo) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	return &powerOfTwoPicker{
		replicas: snapshotOf(replicas),
		weighted: weightsDiffer(replicas),
		bias:     s.cfg.Bias,
		rand:     s.env.Rand,
	}
}

type powerOfTwoPicker struct {
	replicas []*Replica
	weighted bool
	bias     float64
	rand     Rand
}

func (p *powerOfTwoPicker) Pick(*Request) (*Replica, error) {
	if len(p.replicas) == 1 {
		return p.replicas[0], nil
	}
	i, j := twoDistinct(p.rand, len(p.replicas))
	a, b := p.replicas[i], p.replicas[j]
	var sa, sb float64 // larger is better
	if p.weighted {
		sa, sb = p.effectiveWeight(a), p.effectiveWeight(b)
	} else {
		sa, sb = -a.Inflight(), -b.Inflight()
	}
	switch {
	case sb > sa:
		return b, nil
	case sb == sa && boundPerWeight(b) < boundPerWeight(a):
		return b, nil
	}
	return a, nil
}

// effectiveWeight is Envoy's weight/(active+1)^bias.
func (p *powerOfTwoPicker) effectiveWeight(r *Replica) float64 {
	d := r.Inflight() + 1
	switch p.bias {
	case 0:
		d = 1
	case 1:
	default:
		d = math.Pow(d, p.bias)
	}
	return weightOf(r) / d
}

// boundPerWeight is the clients bound to r since its last report per unit
// of weight.
func boundPerWeight(r *Replica) float64 { return float64(r.Live.Bindings.Load()) / weightOf(r) }

// twoDistinct draws two distinct indices in [0,n), n ≥ 2, uniformly.
func twoDistinct(rand Rand, n int) (int, int) {
	i := rand.IntN(n)
	j := rand.IntN(n - 1)
	if j >= i {
		j++
	}
	return i, j
}
