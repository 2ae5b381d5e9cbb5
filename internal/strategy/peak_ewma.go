package strategy

import (
	"math"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// PeakEWMAName is the registered name of the peak-ewma strategy.
const PeakEWMAName = "peak-ewma"

// PeakEWMAConfig is peak-ewma's configuration.
type PeakEWMAConfig struct {
	// Decay is the time constant τ with which a replica's cost decays
	// toward lower round-trip times: after Δt the old cost weighs
	// exp(−Δt/τ). Default 10s, range [100ms,10m].
	Decay protocol.Duration `json:"decay"`
	// DefaultRTT is the cost of a replica never observed that reports no
	// latency_ms metric. Default 5ms, range [1µs,1m].
	DefaultRTT protocol.Duration `json:"default_rtt"`
	// FailureRTT is the least round-trip time a failed call counts as, so
	// that a replica failing fast does not look fast; 0 counts failures at
	// their latency. Default 1s, range [0,1m].
	FailureRTT protocol.Duration `json:"failure_rtt"`
}

var defaultPeakEWMAConfig = PeakEWMAConfig{
	Decay:      protocol.Duration(10 * time.Second),
	DefaultRTT: protocol.Duration(5 * time.Millisecond),
	FailureRTT: protocol.Duration(time.Second),
}

// peakEWMA draws two distinct replicas at random and takes the one of
// lower load
//
//	load = cost · (inflight + 1)
//
// where cost is a peak-sensitive moving average of the replica's round-trip
// time: an observed RTT above the cost replaces it at once, one below is
// blended in as cost' = cost·w + rtt·(1−w) with w = exp(−Δt/τ), Δt the time
// since the previous observation. Between observations the cost decays
// toward zero the same way, so a replica that has gone quiet is tried
// again (Finagle's PeakEwma balancer and Linkerd's tower PeakEwma).
// Inflight is Replica.Inflight. A replica never observed starts at its
// reported latency_ms, or DefaultRTT, when a pick first weighs it, and
// that cost decays from then on like an observed one (tower starts every
// endpoint at its default RTT the same way): otherwise a replica no call
// has reached yet would keep DefaultRTT for good and, at low load, lose
// every draw to replicas observed below it.
//
// The cost and its time stamp live in Live (shared by every snapshot of
// the replica) and are updated without locks by Observe.
type peakEWMA struct {
	cfg PeakEWMAConfig
	env Env
}

var _ Observer = (*peakEWMA)(nil)

func init() {
	Register(Definition{
		Name:     PeakEWMAName,
		Summary:  "two random replicas, the one of lower peak-EWMA latency × (inflight+1) (Finagle, Linkerd)",
		Build:    buildPeakEWMA,
		Defaults: func() map[string]any { return ToParams(defaultPeakEWMAConfig) },
	})
}

func buildPeakEWMA(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultPeakEWMAConfig
	if err := DecodeParams(PeakEWMAName, params, &cfg); err != nil {
		return nil, err
	}
	if err := durationParamIn(PeakEWMAName, "decay", cfg.Decay, 100*time.Millisecond, 10*time.Minute); err != nil {
		return nil, err
	}
	if err := durationParamIn(PeakEWMAName, "default_rtt", cfg.DefaultRTT, time.Microsecond, time.Minute); err != nil {
		return nil, err
	}
	if err := durationParamIn(PeakEWMAName, "failure_rtt", cfg.FailureRTT, 0, time.Minute); err != nil {
		return nil, err
	}
	return &peakEWMA{cfg: cfg, env: env.withDefaults()}, nil
}

func (*peakEWMA) Name() string { return PeakEWMAName }

func (s *peakEWMA) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	return &peakEWMAPicker{s: s, replicas: snapshotOf(replicas)}
}

// Observe blends a finished call's round-trip time into r's cost. Safe for
// concurrent use.
func (s *peakEWMA) Observe(r *Replica, latency time.Duration, failed bool) {
	rtt := float64(max(latency, 0))
	if failed {
		rtt = max(rtt, float64(s.cfg.FailureRTT))
	}
	now := s.env.Now().UnixNano()
	l := r.Live
	for {
		oldBits, stamp := l.ewma.Load(), l.stamp.Load()
		cost := rtt
		if old := math.Float64frombits(oldBits); stamp != 0 && rtt < old {
			w := s.decayWeight(now - stamp)
			cost = old*w + rtt*(1-w)
		}
		if l.ewma.CompareAndSwap(oldBits, math.Float64bits(cost)) {
			l.stamp.Store(now)
			return
		}
	}
}

// decayWeight is exp(−Δt/τ), 1 for Δt ≤ 0.
func (s *peakEWMA) decayWeight(dt int64) float64 {
	if dt <= 0 {
		return 1
	}
	return math.Exp(-float64(dt) / float64(s.cfg.Decay))
}

// cost is r's current cost in nanoseconds at time now (unix ns). The
// first call for a replica never observed starts its cost (seed).
func (s *peakEWMA) cost(r *Replica, now int64) float64 {
	l := r.Live
	stamp := l.stamp.Load()
	if stamp == 0 {
		seed := s.seed(r)
		// Set the cost before its time stamp, and only where neither an
		// observation nor another pick has set it meanwhile.
		if l.ewma.CompareAndSwap(0, math.Float64bits(seed)) && l.stamp.CompareAndSwap(0, now) {
			return seed
		}
		if stamp = l.stamp.Load(); stamp == 0 {
			return seed
		}
	}
	return math.Float64frombits(l.ewma.Load()) * s.decayWeight(now-stamp)
}

// seed is the starting cost of a replica never observed: its reported
// latency_ms, else DefaultRTT.
func (s *peakEWMA) seed(r *Replica) float64 {
	if ms := r.Metrics.LatencyMS; ms > 0 && !math.IsInf(ms, 1) {
		return ms * float64(time.Millisecond)
	}
	return float64(s.cfg.DefaultRTT)
}

// load is cost · (inflight + 1).
func (s *peakEWMA) load(r *Replica, now int64) float64 {
	return s.cost(r, now) * (r.Inflight() + 1)
}

type peakEWMAPicker struct {
	s        *peakEWMA
	replicas []*Replica
}

func (p *peakEWMAPicker) Pick(*Request) (*Replica, error) {
	if len(p.replicas) == 1 {
		return p.replicas[0], nil
	}
	i, j := twoDistinct(p.s.env.Rand, len(p.replicas))
	a, b := p.replicas[i], p.replicas[j]
	now := p.s.env.Now().UnixNano()
	if p.s.load(b, now) < p.s.load(a, now) {
		return b, nil
	}
	return a, nil
}
