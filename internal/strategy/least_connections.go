package strategy

import "sync/atomic"

// LeastConnectionsName is the registered name of the least-connections
// strategy.
const LeastConnectionsName = "least-connections"

// LeastConnectionsConfig is least-connections' configuration. It has no
// parameters.
type LeastConnectionsConfig struct{}

// leastConnections picks the replica with the smallest connection overhead
//
//	C_i = active_i·256 + inactive_i
//
// as IPVS lc does (ip_vs_dest_conn_overhead; the ALBL paper §3 "LC" and its
// footnote on weighting active connections to set them apart from idle
// ones). Here active is the replica's calls in flight (Replica.Inflight:
// the balancer's own or the reported ones, the larger) and inactive the
// clients bound to it since its last report (Live.Bindings). Weights are
// ignored. Ties go to the first minimum in an order that rotates with
// every pick, so that concurrent picks over an idle group spread out
// instead of all landing on the first replica.
type leastConnections struct{}

func init() {
	Register(Definition{
		Name:     LeastConnectionsName,
		Summary:  "fewest connections: min active·256 + inactive (IPVS lc)",
		Build:    buildLeastConnections,
		Defaults: func() map[string]any { return ToParams(LeastConnectionsConfig{}) },
	})
}

func buildLeastConnections(params map[string]any, env Env) (Strategy, error) {
	var cfg LeastConnectionsConfig
	if err := DecodeParams(LeastConnectionsName, params, &cfg); err != nil {
		return nil, err
	}
	return leastConnections{}, nil
}

func (leastConnections) Name() string { return LeastConnectionsName }

func (leastConnections) Picker(replicas []*Replica) Picker {
	return newLeastCostPicker(replicas, connOverhead)
}

// connOverhead is IPVS's connection overhead active·256 + inactive.
func connOverhead(r *Replica) float64 {
	return r.Inflight()*256 + float64(r.Live.Bindings.Load())
}

// leastCostPicker picks the replica of least cost; the connection-counting
// strategies (lc, wlc, sed) differ only in their cost function.
type leastCostPicker struct {
	replicas []*Replica
	cost     func(*Replica) float64
	// next rotates where the scan starts, for fair tie-breaking.
	next atomic.Uint64
}

// newLeastCostPicker builds a leastCostPicker, or the empty picker.
func newLeastCostPicker(replicas []*Replica, cost func(*Replica) float64) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	return &leastCostPicker{replicas: snapshotOf(replicas), cost: cost}
}

func (p *leastCostPicker) Pick(*Request) (*Replica, error) {
	return leastCost(p.replicas, p.next.Add(1)-1, p.cost), nil
}

// leastCost returns the replica of least cost, scanning from replica
// start mod N so that the first of several equal minima rotates.
// replicas must not be empty.
func leastCost(replicas []*Replica, start uint64, cost func(*Replica) float64) *Replica {
	n := len(replicas)
	s := int(start % uint64(n))
	best, bestCost := replicas[s], cost(replicas[s])
	for k := 1; k < n; k++ {
		r := replicas[(s+k)%n]
		if c := cost(r); c < bestCost {
			best, bestCost = r, c
		}
	}
	return best
}
