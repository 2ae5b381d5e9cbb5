package strategy

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// WeightedRoundRobinORCAName is the registered name of the ORCA-driven
// weighted round-robin strategy.
const WeightedRoundRobinORCAName = "weighted-round-robin-orca"

// WeightedRoundRobinORCAConfig is weighted-round-robin-orca's
// configuration. Names, defaults and ranges are gRPC A58's
// WeightedRoundRobinLbConfig (grpc/proposal
// A58-client-side-weighted-round-robin-lb-policy.md).
type WeightedRoundRobinORCAConfig struct {
	// BlackoutPeriod: a replica must report usable load this long before
	// its weight is used, after it becomes eligible and after its weight
	// expired (A58: "avoids churn when the set of endpoint addresses
	// changes"). Default 10s (A58's), range [0,1h]; 0 turns it off.
	BlackoutPeriod protocol.Duration `json:"blackout_period"`
	// WeightExpirationPeriod: a weight not refreshed by a usable report
	// for this long is dropped (the replica gets the mean weight, and the
	// blackout applies again). Default 3m (A58's), range [1s,24h].
	WeightExpirationPeriod protocol.Duration `json:"weight_expiration_period"`
	// WeightUpdatePeriod is how often the weights are recomputed and the
	// scheduler rebuilt (besides every analyzer step). Default 1s (A58's);
	// A58 caps values below 100ms at 100ms, here they are refused. Range
	// [100ms,1h].
	WeightUpdatePeriod protocol.Duration `json:"weight_update_period"`
	// ErrorUtilizationPenalty multiplies the error rate eps/qps added to
	// the utilization. Default 1 (A58's), range [0,1000] (A58 rejects
	// negative values).
	ErrorUtilizationPenalty float64 `json:"error_utilization_penalty"`
}

var defaultWeightedRoundRobinORCAConfig = WeightedRoundRobinORCAConfig{
	BlackoutPeriod:          protocol.Duration(10 * time.Second),
	WeightExpirationPeriod:  protocol.Duration(3 * time.Minute),
	WeightUpdatePeriod:      protocol.Duration(time.Second),
	ErrorUtilizationPenalty: 1,
}

// weightedRoundRobinORCA is gRPC's client-side weighted round-robin (gRFC
// A58), with the replicas' load reports standing for ORCA's. A replica's
// weight is
//
//	weight = qps / (utilization + eps/qps · penalty)
//
// from its reported rps, utilization (the application's own when reported
// and above 0, else cpu: A58's "application_utilization if set, else
// cpu_utilization") and eps. A report with qps or utilization at 0 leaves
// the weight as it was (A58's UpdateWeight returns early).
//
// Weights carry two time stamps per replica, as A58's: nonEmptySince, the
// first usable report since the replica became eligible or its weight last
// expired, and lastUpdated, the last usable report. A weight is used only
// when now − lastUpdated < WeightExpirationPeriod and now − nonEmptySince ≥
// BlackoutPeriod. The strategy sees reports through the snapshots it is
// asked to build pickers for (each analyzer step, each membership change
// and every WeightUpdatePeriod through the Prober seam), so "a usable
// report" is a fresh report (not older than three report intervals) seen
// at such a build; a report that went stale stops refreshing lastUpdated,
// and the weight lives on until it expires, as in A58. The time stamps are
// kept in the strategy, keyed by replica id, under a mutex, and forgotten
// for a replica that is not eligible at a build (A58 resets nonEmptySince
// when a subchannel comes back READY); a new strategy value (a parameter
// change) starts afresh.
//
// Replicas without a usable weight get the mean of the others (A58: "are
// still picked but with the average weight"). With fewer than two usable
// weights A58 gives every replica the same weight; here every replica gets
// its configured weight instead (1 unless the operator set one, so that is
// A58's round-robin). Calls then go by the smooth weighted round-robin of
// weighted-round-robin (stride scheduling, as grpc-go's static scheduler),
// started at a random point of the schedule so that balancers do not
// synchronise (A58 starts each EDF deadline at random for the same
// reason). Pick is lock-free and allocation-free.
type weightedRoundRobinORCA struct {
	cfg WeightedRoundRobinORCAConfig
	env Env
	seq *atomic.Uint64 // the schedule position, shared by its pickers

	mu    sync.Mutex
	state map[string]*orcaWeight // guarded by mu
}

// orcaWeight is one replica's weight and A58's time stamps.
type orcaWeight struct {
	weight        float64
	nonEmptySince time.Time // zero: none since eligible or expiry
	lastUpdated   time.Time
}

var _ Prober = (*weightedRoundRobinORCA)(nil)

func init() {
	Register(Definition{
		Name:     WeightedRoundRobinORCAName,
		Summary:  "weighted round-robin with weights qps/(utilization + eps/qps·penalty) from load reports, blackout and expiry (gRPC A58)",
		Build:    buildWeightedRoundRobinORCA,
		Defaults: func() map[string]any { return ToParams(defaultWeightedRoundRobinORCAConfig) },
	})
}

func buildWeightedRoundRobinORCA(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultWeightedRoundRobinORCAConfig
	const s = WeightedRoundRobinORCAName
	if err := DecodeParams(s, params, &cfg); err != nil {
		return nil, err
	}
	if err := durationParamIn(s, "blackout_period", cfg.BlackoutPeriod, 0, time.Hour); err != nil {
		return nil, err
	}
	if err := durationParamIn(s, "weight_expiration_period", cfg.WeightExpirationPeriod, time.Second, 24*time.Hour); err != nil {
		return nil, err
	}
	if err := durationParamIn(s, "weight_update_period", cfg.WeightUpdatePeriod, 100*time.Millisecond, time.Hour); err != nil {
		return nil, err
	}
	if err := floatParamIn(s, "error_utilization_penalty", cfg.ErrorUtilizationPenalty, 0, 1000); err != nil {
		return nil, err
	}
	env = env.withDefaults()
	return &weightedRoundRobinORCA{cfg: cfg, env: env, seq: newSequence(env.Rand), state: map[string]*orcaWeight{}}, nil
}

func (*weightedRoundRobinORCA) Name() string { return WeightedRoundRobinORCAName }

// Probes implements Prober with no probes: it only asks for the picker to
// be rebuilt every WeightUpdatePeriod, since weights change with time.
func (s *weightedRoundRobinORCA) Probes() ProbeSpec {
	return ProbeSpec{Period: s.cfg.WeightUpdatePeriod.D()}
}

// ProbeTargets implements Prober: nothing to probe.
func (*weightedRoundRobinORCA) ProbeTargets(_ []*Replica, _ time.Time, dst []int) []int { return dst }

// Probed implements Prober: there are no results.
func (*weightedRoundRobinORCA) Probed([]ProbeResult, time.Time) string { return "" }

// orcaReportWeight is A58's weight of a report, 0 when the report is not
// usable (qps or utilization not above 0).
func orcaReportWeight(m Metrics, penalty float64) float64 {
	qps := m.RPS
	util := m.Utilization
	if math.IsNaN(util) || util <= 0 {
		util = m.CPU
	}
	if math.IsNaN(qps) || math.IsNaN(util) || !(qps > 0) || !(util > 0) || math.IsInf(qps, 1) {
		return 0
	}
	if eps := m.EPS; eps > 0 && !math.IsInf(eps, 1) {
		util += eps / qps * penalty
	}
	return qps / util
}

// weightAt updates w from r's report and returns the weight to use now
// (0: none usable).
func (s *weightedRoundRobinORCA) weightAt(w *orcaWeight, r *Replica, now time.Time) float64 {
	if r.Reported {
		if nw := orcaReportWeight(r.Metrics, s.cfg.ErrorUtilizationPenalty); nw > 0 {
			if w.nonEmptySince.IsZero() {
				w.nonEmptySince = now
			}
			w.lastUpdated, w.weight = now, nw
		}
	}
	if w.lastUpdated.IsZero() {
		return 0
	}
	if now.Sub(w.lastUpdated) >= s.cfg.WeightExpirationPeriod.D() {
		w.nonEmptySince = time.Time{}
		return 0
	}
	if b := s.cfg.BlackoutPeriod.D(); b > 0 && (w.nonEmptySince.IsZero() || now.Sub(w.nonEmptySince) < b) {
		return 0
	}
	return w.weight
}

func (s *weightedRoundRobinORCA) Picker(replicas []*Replica) Picker {
	now := s.env.Now()
	weights := make([]float64, len(replicas))
	s.mu.Lock()
	seen := make(map[string]bool, len(replicas))
	var sum float64
	known := 0
	for i, r := range replicas {
		seen[r.ID] = true
		w := s.state[r.ID]
		if w == nil {
			w = &orcaWeight{}
			s.state[r.ID] = w
		}
		if weights[i] = s.weightAt(w, r, now); weights[i] > 0 {
			sum += weights[i]
			known++
		}
	}
	for id := range s.state {
		if !seen[id] {
			delete(s.state, id)
		}
	}
	s.mu.Unlock()
	if len(replicas) == 0 {
		return noReplicas{}
	}
	if known < 2 {
		for i, r := range replicas {
			weights[i] = weightOf(r)
		}
	} else {
		mean := sum / float64(known)
		for i := range weights {
			if weights[i] <= 0 {
				weights[i] = mean
			}
		}
	}
	return newStridePicker(replicas, weights, s.seq)
}
