package strategy

// ShortestExpectedDelayName is the registered name of the
// shortest-expected-delay strategy.
const ShortestExpectedDelayName = "shortest-expected-delay"

// ShortestExpectedDelayConfig is shortest-expected-delay's configuration.
// It has no parameters: the weights are the replicas' own.
type ShortestExpectedDelayConfig struct{}

// shortestExpectedDelay picks the replica with the shortest expected delay
//
//	E_i = (C_i + 1) / U_i
//
// counting the new call or client as one more, with U_i the replica's
// weight as its service rate (the ALBL paper §3 "SED", after Weinrib and Shenker;
// IPVS sed). IPVS counts only active connections in C, since its inactive
// ones cost nothing; here C_i = active_i + inactive_i, calls in flight
// (Replica.Inflight) plus clients bound since the last report
// (Live.Bindings), because a bound client does load its replica and, in
// the redirecting binding modes, is all the balancer sees. Proxying, where
// nothing is bound, this is IPVS's sed exactly. Unlike wlc, SED prefers an
// idle heavy replica over an idle light one, and keeps doing so until the
// heavy one has W_heavy/W_light − 1 more. Ties rotate as in
// least-connections.
type shortestExpectedDelay struct{}

func init() {
	Register(Definition{
		Name:     ShortestExpectedDelayName,
		Summary:  "shortest expected delay: min (C+1)/W (IPVS sed)",
		Build:    buildShortestExpectedDelay,
		Defaults: func() map[string]any { return ToParams(ShortestExpectedDelayConfig{}) },
	})
}

func buildShortestExpectedDelay(params map[string]any, env Env) (Strategy, error) {
	var cfg ShortestExpectedDelayConfig
	if err := DecodeParams(ShortestExpectedDelayName, params, &cfg); err != nil {
		return nil, err
	}
	return shortestExpectedDelay{}, nil
}

func (shortestExpectedDelay) Name() string { return ShortestExpectedDelayName }

func (shortestExpectedDelay) Picker(replicas []*Replica) Picker {
	return newLeastCostPicker(replicas, expectedDelay)
}

// expectedDelay is sed's cost (C+1)/W with C = active + inactive.
func expectedDelay(r *Replica) float64 {
	return (r.Inflight() + float64(r.Live.Bindings.Load()) + 1) / weightOf(r)
}
