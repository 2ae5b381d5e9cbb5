package strategy

import (
	"math"
	"sync/atomic"
)

// WeightedRoundRobinName is the registered name of the smooth weighted
// round-robin strategy.
const WeightedRoundRobinName = "weighted-round-robin"

// WeightedRoundRobinConfig is weighted-round-robin's configuration. It has
// no parameters: the weights are the replicas' own.
type WeightedRoundRobinConfig struct{}

// weightedRoundRobin hands out picks in proportion to the replicas' weights
// W_i, interleaved rather than in bursts (the ALBL paper §3 "WRR", IPVS wrr; the
// smoothness is that of nginx's smooth WRR).
//
// The schedule is stride scheduling as in grpc-go's weightedroundrobin
// static scheduler: the weights become integers q_i with the same ratios
// and Q = max q_i; an atomic sequence number s is split into a generation
// g = s div N and a replica i = s mod N, and replica i takes the pick when
//
//	(q_i·g + o_i) mod Q < q_i
//
// which holds in exactly q_i of every Q generations, evenly spread
// (Bresenham). Over any Σq consecutive picks replica i therefore gets
// exactly q_i. The offsets o_i stagger replicas of equal weight by a
// fraction of their period, so that the light replicas do not all land in
// one generation and leave the heavy one a long run. Pick is lock-free and
// allocation-free; it loops at most a few generations on average
// (N·Q/Σq sequence numbers per pick).
type weightedRoundRobin struct {
	env Env
	seq *atomic.Uint64 // the schedule position, shared by its pickers
}

func init() {
	Register(Definition{
		Name:     WeightedRoundRobinName,
		Summary:  "smooth weighted round-robin: picks in proportion to weights, interleaved (IPVS wrr, nginx smooth WRR)",
		Build:    buildWeightedRoundRobin,
		Defaults: func() map[string]any { return ToParams(WeightedRoundRobinConfig{}) },
	})
}

func buildWeightedRoundRobin(params map[string]any, env Env) (Strategy, error) {
	var cfg WeightedRoundRobinConfig
	if err := DecodeParams(WeightedRoundRobinName, params, &cfg); err != nil {
		return nil, err
	}
	env = env.withDefaults()
	return &weightedRoundRobin{env: env, seq: newSequence(env.Rand)}, nil
}

func (*weightedRoundRobin) Name() string { return WeightedRoundRobinName }

func (s *weightedRoundRobin) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	weights := make([]float64, len(replicas))
	for i, r := range replicas {
		weights[i] = weightOf(r)
	}
	return newStridePicker(replicas, weights, s.seq)
}

// newSequence returns a pick counter for pickers to share, at a random
// start so that balancers do not move in step.
func newSequence(rand Rand) *atomic.Uint64 {
	seq := new(atomic.Uint64)
	seq.Store(uint64(rand.IntN(1 << 30)))
	return seq
}

// newStridePicker returns the smooth weighted round-robin picker over
// replicas with the given weights (finite, > 0; one per replica), taking
// its schedule positions from seq. seq belongs to the strategy and is
// shared by its successive pickers: a group rebuilds its picker at every
// analyzer step, and a picker starting afresh each time (at a random
// point, or at 0, which favours the replicas scheduled first) would make
// picks spaced more than a step apart random. The weighted strategies
// whose weights are computed (albl, weighted-round-robin-orca) share it.
func newStridePicker(replicas []*Replica, weights []float64, seq *atomic.Uint64) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	q := strideWeights(weights)
	var period uint64
	for _, w := range q {
		period = max(period, w)
	}
	// Stagger each class of equal weights: the k-th of c replicas of
	// weight w gets offset k·Q/c, shifting its pattern by 1/c of its period.
	count := map[uint64]uint64{}
	for _, w := range q {
		count[w]++
	}
	rank := map[uint64]uint64{}
	offset := make([]uint64, len(q))
	for i, w := range q {
		offset[i] = rank[w] * period / count[w]
		rank[w]++
	}
	p := &weightedRoundRobinPicker{
		replicas: snapshotOf(replicas),
		weight:   q,
		offset:   offset,
		period:   period,
		seq:      seq,
	}
	return p
}

type weightedRoundRobinPicker struct {
	replicas []*Replica
	weight   []uint64 // q_i
	offset   []uint64 // o_i, in [0,Q)
	period   uint64   // Q
	seq      *atomic.Uint64
}

func (p *weightedRoundRobinPicker) Pick(*Request) (*Replica, error) {
	n := uint64(len(p.replicas))
	for {
		s := p.seq.Add(1) - 1
		g, i := (s/n)%p.period, s%n
		if (p.weight[i]*g+p.offset[i])%p.period < p.weight[i] {
			return p.replicas[i], nil
		}
	}
}

// maxExactWeight bounds the integer weights used as they are; larger or
// finer weights are scaled to strideResolution steps of the largest.
const (
	maxExactWeight   = 1 << 20
	strideResolution = 1 << 16
)

// strideWeights returns integer weights q_i ≥ 1 with the ratios of the
// weights w (finite, > 0), divided by their greatest common divisor. The ratios
// are exact when every weight times 1, 10, 100 or 1000 is an integer no
// larger than maxExactWeight (weights 5, 1, 1 or 1.5, 0.5), and within
// 1/strideResolution of the largest weight otherwise.
func strideWeights(w []float64) []uint64 {
	q := make([]uint64, len(w))
	exact := func(scale float64) bool {
		for i, wi := range w {
			x := wi * scale
			rx := math.Round(x)
			if rx < 1 || rx > maxExactWeight || math.Abs(x-rx) > 1e-9*x {
				return false
			}
			q[i] = uint64(rx)
		}
		return true
	}
	if !exact(1) && !exact(10) && !exact(100) && !exact(1000) {
		var wmax float64
		for _, wi := range w {
			wmax = max(wmax, wi)
		}
		for i, wi := range w {
			q[i] = max(1, uint64(math.Round(wi/wmax*strideResolution)))
		}
	}
	d := q[0]
	for _, w := range q[1:] {
		d = strideGCD(d, w)
	}
	for i := range q {
		q[i] /= d
	}
	return q
}

func strideGCD(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
