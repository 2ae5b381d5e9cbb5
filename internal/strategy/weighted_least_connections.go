package strategy

// WeightedLeastConnectionsName is the registered name of the
// weighted-least-connections strategy.
const WeightedLeastConnectionsName = "weighted-least-connections"

// WeightedLeastConnectionsConfig is weighted-least-connections'
// configuration. It has no parameters: the weights are the replicas' own.
type WeightedLeastConnectionsConfig struct{}

// weightedLeastConnections picks the replica k with
//
//	C_k / W_k = min_i C_i / W_i
//
// where C_i is least-connections' overhead active·256 + inactive and W_i
// the replica's weight (IPVS wlc; the ALBL paper §3 "WLC"). Ties rotate as in
// least-connections.
type weightedLeastConnections struct{}

func init() {
	Register(Definition{
		Name:     WeightedLeastConnectionsName,
		Summary:  "fewest connections per unit of weight: min C/W (IPVS wlc)",
		Build:    buildWeightedLeastConnections,
		Defaults: func() map[string]any { return ToParams(WeightedLeastConnectionsConfig{}) },
	})
}

func buildWeightedLeastConnections(params map[string]any, env Env) (Strategy, error) {
	var cfg WeightedLeastConnectionsConfig
	if err := DecodeParams(WeightedLeastConnectionsName, params, &cfg); err != nil {
		return nil, err
	}
	return weightedLeastConnections{}, nil
}

func (weightedLeastConnections) Name() string { return WeightedLeastConnectionsName }

func (weightedLeastConnections) Picker(replicas []*Replica) Picker {
	return newLeastCostPicker(replicas, connPerWeight)
}

// connPerWeight is wlc's cost C/W.
func connPerWeight(r *Replica) float64 { return connOverhead(r) / weightOf(r) }
