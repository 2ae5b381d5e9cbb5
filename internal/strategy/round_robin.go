package strategy

import "sync/atomic"

// RoundRobinName is the registered name of the round-robin strategy.
const RoundRobinName = "round-robin"

// RoundRobinConfig is round-robin's configuration. It has no parameters.
type RoundRobinConfig struct{}

// roundRobin hands out the replicas in turn, ignoring weights and load:
// pick k goes to replica k mod N (IPVS rr, the ALBL paper §3 "Round-Robin"; the
// picker follows grpc-go's round_robin: an atomic counter, started at a
// random replica). The counter belongs to the strategy, not to a picker:
// a group rebuilds its picker at every analyzer step, and a counter
// started afresh (at a random replica) each time turned the rotation into
// a random pick for clients arriving more than a step apart.
type roundRobin struct {
	env Env
	seq *atomic.Uint64
}

func init() {
	Register(Definition{
		Name:     RoundRobinName,
		Summary:  "each replica in turn, ignoring weights and load (IPVS rr)",
		Build:    buildRoundRobin,
		Defaults: func() map[string]any { return ToParams(RoundRobinConfig{}) },
	})
}

func buildRoundRobin(params map[string]any, env Env) (Strategy, error) {
	var cfg RoundRobinConfig
	if err := DecodeParams(RoundRobinName, params, &cfg); err != nil {
		return nil, err
	}
	env = env.withDefaults()
	return &roundRobin{env: env, seq: newSequence(env.Rand)}, nil
}

func (*roundRobin) Name() string { return RoundRobinName }

func (s *roundRobin) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	return &roundRobinPicker{replicas: snapshotOf(replicas), next: s.seq}
}

type roundRobinPicker struct {
	replicas []*Replica
	next     *atomic.Uint64 // shared by the strategy's pickers
}

func (p *roundRobinPicker) Pick(*Request) (*Replica, error) {
	k := p.next.Add(1) - 1
	return p.replicas[k%uint64(len(p.replicas))], nil
}
