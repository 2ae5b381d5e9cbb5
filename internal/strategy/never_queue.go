package strategy

import "sync/atomic"

// NeverQueueName is the registered name of the never-queue strategy.
const NeverQueueName = "never-queue"

// NeverQueueConfig is never-queue's configuration. It has no parameters:
// the weights are the replicas' own.
type NeverQueueConfig struct{}

// neverQueue sends a call to an idle replica whenever there is one, so that
// it never waits in a queue, and otherwise to the replica of shortest
// expected delay (C+1)/W, C = active + inactive as in
// shortest-expected-delay (the ALBL paper §3 "Never Queue", after Weinrib and
// Shenker; IPVS nq). A replica is idle when it has no call in flight
// (active = 0). Among several idle replicas the one of shortest expected
// delay wins — which counts the clients bound to each — rather than IPVS's
// first found, so that a group that only redirects (and so sees no calls
// in flight) is still spread. Ties rotate as in least-connections.
type neverQueue struct{}

func init() {
	Register(Definition{
		Name:     NeverQueueName,
		Summary:  "an idle replica first, else shortest expected delay (IPVS nq)",
		Build:    buildNeverQueue,
		Defaults: func() map[string]any { return ToParams(NeverQueueConfig{}) },
	})
}

func buildNeverQueue(params map[string]any, env Env) (Strategy, error) {
	var cfg NeverQueueConfig
	if err := DecodeParams(NeverQueueName, params, &cfg); err != nil {
		return nil, err
	}
	return neverQueue{}, nil
}

func (neverQueue) Name() string { return NeverQueueName }

func (neverQueue) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	return &neverQueuePicker{replicas: snapshotOf(replicas)}
}

type neverQueuePicker struct {
	replicas []*Replica
	next     atomic.Uint64
}

func (p *neverQueuePicker) Pick(*Request) (*Replica, error) {
	n := len(p.replicas)
	s := int((p.next.Add(1) - 1) % uint64(n))
	var idle *Replica
	var idleCost float64
	for k := range n {
		r := p.replicas[(s+k)%n]
		if r.Inflight() > 0 {
			continue
		}
		if c := expectedDelay(r); idle == nil || c < idleCost {
			idle, idleCost = r, c
		}
	}
	if idle != nil {
		return idle, nil
	}
	return leastCost(p.replicas, uint64(s), expectedDelay), nil
}
