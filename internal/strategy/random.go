package strategy

// RandomName is the registered name of the random strategy.
const RandomName = "random"

// RandomConfig is random's configuration. It has no parameters.
type RandomConfig struct{}

// random picks a replica uniformly at random, ignoring weights and load
// (the ALBL paper §3 "Random"; the "NLB" baseline of the .NET Remoting paper).
type random struct{ env Env }

func init() {
	Register(Definition{
		Name:     RandomName,
		Summary:  "a replica chosen uniformly at random",
		Build:    buildRandom,
		Defaults: func() map[string]any { return ToParams(RandomConfig{}) },
	})
}

func buildRandom(params map[string]any, env Env) (Strategy, error) {
	var cfg RandomConfig
	if err := DecodeParams(RandomName, params, &cfg); err != nil {
		return nil, err
	}
	return &random{env: env.withDefaults()}, nil
}

func (*random) Name() string { return RandomName }

func (s *random) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	return &randomPicker{replicas: snapshotOf(replicas), rand: s.env.Rand}
}

type randomPicker struct {
	replicas []*Replica
	rand     Rand
}

func (p *randomPicker) Pick(*Request) (*Replica, error) {
	return p.replicas[p.rand.IntN(len(p.replicas))], nil
}
