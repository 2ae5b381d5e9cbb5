package strategy

import (
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// PrequalName is the registered name of the Prequal strategy.
const PrequalName = "prequal"

// PrequalConfig is prequal's configuration. Defaults marked "the paper's"
// follow the paper; where the paper has no equivalent (fulcrum probes
// from a ticking loop rather than from each query), the value is chosen
// by reasoning, said below. Where the paper's values come from:
// docs/strategies.md, "Where the parameters come from".
type PrequalConfig struct {
	// Path is where replicas answer load probes with
	// {"rif": N, "latency_ms": x}; the Go monitor answers at
	// protocol.ProbePath. Default "/fulcrum/probe".
	Path string `json:"path"`
	// ProbeInterval is how often the balancer issues the probes the
	// queries since the last round call for. fulcrum cannot probe from
	// the hot path (Pick does no I/O), so probing is batched; 10ms keeps
	// probe results no older than a typical call. Default 10ms, range
	// [1ms,10s].
	ProbeInterval protocol.Duration `json:"probe_interval"`
	// ProbeTimeout bounds a probe; a replica that does not answer in time
	// loses its probe from the pool. Default 100ms (not the paper's), range
	// [1ms,10s].
	ProbeTimeout protocol.Duration `json:"probe_timeout"`
	// ProbesPerQuery is r_probe, the probes issued per query (pick); each
	// round probes at most every eligible replica once. Default 3 (the
	// paper's), range [0,16].
	ProbesPerQuery float64 `json:"probes_per_query"`
	// PoolSize is the most probes kept (one per replica at most: a newer
	// probe of a replica replaces its older one). Default 16 (the
	// paper's), range [1,64].
	PoolSize int `json:"pool_size"`
	// MaxAge is how long a probe may be used. Default 1s (the paper's),
	// range [1ms,1m].
	MaxAge protocol.Duration `json:"max_age"`
	// MaxReuse is how many queries one probe may route. The paper derives
	// a reuse budget from the probe and removal rates; here it is a bound,
	// 16 as prequal-rs's, since a reused probe's RIF is kept current with
	// the balancer's own calls in flight (below). It counts per probe
	// asked for: when a round owes more probes (r_probe per pick) than it
	// can issue (one per replica), each probe it issues stands for the
	// ones it could not and may route as many times MaxReuse. Default 16,
	// range [1,1000].
	MaxReuse int `json:"max_reuse"`
	// QRIF is the quantile of recent probes' RIF above which a replica is
	// hot. Each of N replicas is about 1/N of the probes, so a replica
	// can only be hot when 1/N < 1 − QRIF: in groups of fewer than seven
	// replicas the paper's value marks none hot and latency alone decides;
	// lower it there (0.5 for three) for RIF to count. Default 0.84 (the
	// paper's), range [0,1].
	QRIF float64 `json:"q_rif"`
	// Tolerance is how far apart cold probes' latencies may be and still
	// count as equal: those within this factor of the least are ties, and
	// the lowest RIF among them wins, then a uniform draw. 1 is the
	// paper's strict order; a tolerance spreads calls between equal
	// replicas but lets more reach one that is worse in a way its latency
	// does not show, which is why the default stays the paper's (the
	// measurements: docs/strategies.md, "Tolerance, and why it is off").
	// Default 1, range [1,10].
	Tolerance float64 `json:"tolerance"`
}

var defaultPrequalConfig = PrequalConfig{
	Path:           protocol.ProbePath,
	ProbeInterval:  protocol.Duration(10 * time.Millisecond),
	ProbeTimeout:   protocol.Duration(100 * time.Millisecond),
	ProbesPerQuery: 3,
	PoolSize:       16,
	MaxAge:         protocol.Duration(time.Second),
	MaxReuse:       16,
	QRIF:           0.84,
	Tolerance:      1,
}

// prequalMaxPool bounds PoolSize.
const prequalMaxPool = 64

// prequalHistory is how many recent probes' RIF the hot threshold is the
// quantile of.
const prequalHistory = 64

// prequal is Prequal (Wydrowski, Kleinberg, Rumble, Archer: "Load is not
// what you should balance: Introducing Prequal", NSDI 2024): calls go by
// probed requests-in-flight and latency, not by CPU load.
//
// Probing is asynchronous: every ProbeInterval the balancer GETs Path on
// ⌊r_probe·q⌋ distinct random replicas (q: the picks since the previous
// round, the remainder carried over), at least one when the pool is less
// than half full, and each answer, {"rif": N, "latency_ms": x} — the
// replica's requests in flight and its recent median latency — enters a
// small pool of at most PoolSize probes, replacing the replica's older
// probe, else an expired or used-up one, else the oldest. A probe that
// fails removes the replica's probe from the pool and marks the replica
// failing until one of its probes answers.
//
// A round probes each replica at most once where the paper, probing from
// each query, would probe it again and again, each new probe starting its
// uses afresh; so when a round owes w = r_probe·q probes and issues k < w,
// each of its probes may route MaxReuse·w/k queries, not MaxReuse. With a
// fixed bound the pool would run dry within every round once picks
// outpaced k·MaxReuse per ProbeInterval (4,800 a second with three
// replicas and the defaults), and the rest of the round's picks would be
// blind.
//
// A pick uses the pool's probes younger than MaxAge and not used up
// (the hot-cold lexicographic rule): a probe is hot when its
// RIF is above the QRIF quantile of the last 64 probes' RIFs
// (interpolated between order statistics); among cold
// probes the one of lowest latency wins (then lowest RIF), latencies
// within Tolerance of the least counting as equal; when all are
// hot, the one of lowest RIF; equal probes are drawn uniformly. The
// probe's use count goes up by one; at
// MaxReuse it leaves the pool. A probe's RIF counts as the calls in flight
// the replica had when probed or, when more, those the balancer knows of
// now (Replica.Inflight: its own proxied calls, or the reported metric):
// fulcrum's addition, so that the calls routed since the probe count
// without a reused probe drawing a burst, and so that they stop counting
// when they end. With no usable probe (at start, after a lull) the pick
// falls back to the better of two random replicas by calls in flight,
// among those not failing (among all when every one is: their probes then
// tell none apart, as when replicas do not answer probes at all).
//
// The pool is shared by every picker of the strategy value: slots are
// atomic pointers, written under a mutex by Probed and read without locks
// by Pick, which allocates nothing; so is the failing set, replaced whole
// (copy on write) when it changes.
type prequal struct {
	cfg PrequalConfig
	env Env

	slots     []atomic.Pointer[prequalProbe]
	threshold atomic.Uint64 // float64 bits: the hot RIF threshold
	picks     atomic.Int64  // picks since the last ProbeTargets
	// failing holds the ids of the replicas whose last probe failed. A
	// stored map is never written.
	failing atomic.Pointer[map[string]bool]

	mu      sync.Mutex // guards the writers of slots and failing, and what follows
	history [prequalHistory]float64
	seen    int     // probes entered into history
	carry   float64 // fractional probes owed
	budget  int64   // uses of a probe entering the pool: the last round's
}

// prequalProbe is one probe in the pool. All but uses is immutable.
type prequalProbe struct {
	id      string
	rif     float64
	latency float64 // ms
	at      int64   // unix ns
	budget  int64   // the queries it may route
	uses    atomic.Int64
}

var _ Prober = (*prequal)(nil)

func init() {
	Register(Definition{
		Name:     PrequalName,
		Summary:  "Prequal (NSDI 2024): asynchronous probes of requests in flight and latency, hot-cold lexicographic choice",
		Build:    buildPrequal,
		Defaults: func() map[string]any { return ToParams(defaultPrequalConfig) },
	})
}

func buildPrequal(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultPrequalConfig
	const s = PrequalName
	if err := DecodeParams(s, params, &cfg); err != nil {
		return nil, err
	}
	if !validProbePath(cfg.Path) {
		return nil, &ParamError{Strategy: s, Field: "path", Value: cfg.Path, Allowed: `must be a path starting with "/", without spaces or control characters`}
	}
	checks := []error{
		durationParamIn(s, "probe_interval", cfg.ProbeInterval, time.Millisecond, 10*time.Second),
		durationParamIn(s, "probe_timeout", cfg.ProbeTimeout, time.Millisecond, 10*time.Second),
		floatParamIn(s, "probes_per_query", cfg.ProbesPerQuery, 0, 16),
		intParamIn(s, "pool_size", cfg.PoolSize, 1, prequalMaxPool),
		durationParamIn(s, "max_age", cfg.MaxAge, time.Millisecond, time.Minute),
		intParamIn(s, "max_reuse", cfg.MaxReuse, 1, 1000),
		floatParamIn(s, "q_rif", cfg.QRIF, 0, 1),
		floatParamIn(s, "tolerance", cfg.Tolerance, 1, 10),
	}
	for _, err := range checks {
		if err != nil {
			return nil, err
		}
	}
	p := &prequal{cfg: cfg, env: env.withDefaults(), slots: make([]atomic.Pointer[prequalProbe], cfg.PoolSize), budget: int64(cfg.MaxReuse)}
	p.threshold.Store(math.Float64bits(math.Inf(1)))
	p.failing.Store(new(map[string]bool))
	return p, nil
}

// validProbePath reports whether p is a path a probe can GET.
func validProbePath(p string) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

func (*prequal) Name() string { return PrequalName }

// Probes implements Prober: load probes, asynchronous.
func (s *prequal) Probes() ProbeSpec {
	return ProbeSpec{
		Period: s.cfg.ProbeInterval.D(),
		Probes: []Probe{{Kind: ProbeLoad, Path: s.cfg.Path, Timeout: s.cfg.ProbeTimeout.D()}},
		Async:  true,
	}
}

// prequalMaxBudget bounds a probe's uses however far a round falls short
// of the probes it owes.
const prequalMaxBudget = 1 << 30

// ProbeTargets implements Prober: r_probe probes per pick since the last
// round, on distinct random replicas. It also sets how many queries each
// of the round's probes may route (see prequal).
func (s *prequal) ProbeTargets(replicas []*Replica, now time.Time, dst []int) []int {
	n := len(replicas)
	if n == 0 {
		return dst
	}
	s.mu.Lock()
	want := s.carry + s.cfg.ProbesPerQuery*float64(s.picks.Swap(0))
	k := int(want)
	s.carry = want - float64(k)
	if k == 0 && s.live(now.UnixNano()) < (len(s.slots)+1)/2 {
		k = 1
	}
	k = min(k, n)
	s.budget = int64(s.cfg.MaxReuse)
	if k > 0 && want > float64(k) {
		s.budget = int64(min(math.Ceil(float64(s.cfg.MaxReuse)*want/float64(k)), prequalMaxBudget))
	}
	s.forgetGoneLocked(replicas)
	s.mu.Unlock()
	base := len(dst)
	for i := range n {
		dst = append(dst, i)
	}
	idx := dst[base:]
	for i := range k { // partial Fisher-Yates: k distinct at random
		j := i + s.env.Rand.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return dst[:base+k]
}

// live counts the usable probes in the pool.
func (s *prequal) live(now int64) int {
	n := 0
	for i := range s.slots {
		if e := s.slots[i].Load(); e != nil && s.usable(e, now) {
			n++
		}
	}
	return n
}

func (s *prequal) usable(e *prequalProbe, now int64) bool {
	return now-e.at <= int64(s.cfg.MaxAge) && e.uses.Load() < e.budget
}

// Probed implements Prober: load answers enter the pool; a failed probe
// takes its replica's probe out and marks the replica failing.
func (s *prequal) Probed(results []ProbeResult, _ time.Time) string {
	now := s.env.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range results {
		if r.Kind != ProbeLoad {
			continue
		}
		s.setFailingLocked(r.Replica, !r.OK)
		if !r.OK {
			for i := range s.slots {
				if e := s.slots[i].Load(); e != nil && e.id == r.Replica {
					s.slots[i].Store(nil)
				}
			}
			continue
		}
		rif := max(r.RIF, 0)
		e := &prequalProbe{id: r.Replica, rif: rif, latency: max(r.LatencyMS, 0), at: now, budget: s.budget}
		s.slots[s.slotFor(r.Replica, now)].Store(e)
		s.history[s.seen%prequalHistory] = rif
		s.seen++
		s.threshold.Store(math.Float64bits(s.quantile()))
	}
	return ""
}

// setFailingLocked marks id failing or not. Caller holds s.mu.
func (s *prequal) setFailingLocked(id string, failing bool) {
	old := *s.failing.Load()
	if old[id] == failing {
		return
	}
	next := maps.Clone(old)
	if next == nil {
		next = map[string]bool{}
	}
	if failing {
		next[id] = true
	} else {
		delete(next, id)
	}
	s.failing.Store(&next)
}

// forgetGoneLocked drops the replicas no longer eligible from the failing
// set. Caller holds s.mu.
func (s *prequal) forgetGoneLocked(replicas []*Replica) {
	old := *s.failing.Load()
	var next map[string]bool
	for id := range old {
		if slices.ContainsFunc(replicas, func(r *Replica) bool { return r.ID == id }) {
			continue
		}
		if next == nil {
			next = maps.Clone(old)
		}
		delete(next, id)
	}
	if next != nil {
		s.failing.Store(&next)
	}
}

// slotFor picks the slot a new probe of id goes to: id's own, else an
// empty, expired or used-up one, else the oldest. Caller holds s.mu.
func (s *prequal) slotFor(id string, now int64) int {
	free, oldest := -1, 0
	var oldestAt int64 = math.MaxInt64
	for i := range s.slots {
		e := s.slots[i].Load()
		switch {
		case e == nil || !s.usable(e, now):
			if free < 0 {
				free = i
			}
			continue
		case e.id == id:
			return i
		case e.at < oldestAt:
			oldest, oldestAt = i, e.at
		}
	}
	if free >= 0 {
		// id may still hold a slot among the ones skipped as unusable;
		// clear it so that the pool keeps one probe per replica.
		for i := range s.slots {
			if e := s.slots[i].Load(); e != nil && e.id == id && i != free {
				s.slots[i].Store(nil)
			}
		}
		return free
	}
	return oldest
}

// quantile is the QRIF quantile of the RIF history, interpolated between
// order statistics (h = (n−1)·q, Hyndman and Fan's type 7), so that with
// few replicas a replica far above the others is hot even when it is more
// than 1 − QRIF of the probes. Caller holds s.mu.
func (s *prequal) quantile() float64 {
	n := min(s.seen, prequalHistory)
	sorted := slices.Clone(s.history[:n])
	slices.Sort(sorted)
	h := s.cfg.QRIF * float64(n-1)
	lo := int(h)
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func (s *prequal) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	p := &prequalPicker{s: s, replicas: snapshotOf(replicas), index: make(map[string]int, len(replicas))}
	for i, r := range replicas {
		p.index[r.ID] = i
	}
	return p
}

type prequalPicker struct {
	s        *prequal
	replicas []*Replica
	index    map[string]int // replica id → position in replicas
}

func (p *prequalPicker) Pick(*Request) (*Replica, error) {
	s := p.s
	s.picks.Add(1)
	now := s.env.Now().UnixNano()
	hot := math.Float64frombits(s.threshold.Load())
	// The first pass finds the least cold latency and the best hot probe;
	// the second draws among the cold probes within the tolerance of that
	// latency. The slots may change between the passes (Probed, a used-up
	// probe leaving): the first pass's best cold probe stands in when the
	// second finds none.
	var warm, first *prequalProbe
	warmSlot, warmAt, firstSlot, firstAt := -1, -1, -1, -1
	var warmRIF float64
	minLat := math.Inf(1)
	// Equal probes are a uniform draw (reservoir sampling: the k-th equal
	// one replaces the pick with probability 1/k). Coarse estimates tie
	// often (a monitor that has measured nothing yet answers latency 0),
	// and the first in any fixed order would take all.
	warmTies := 0
	for i := range s.slots {
		e, at, rif := p.candidate(i, now)
		if e == nil {
			continue
		}
		if rif <= hot {
			if e.latency < minLat {
				minLat, first, firstSlot, firstAt = e.latency, e, i, at
			}
			continue
		}
		if drawLeast(s.env.Rand, warm != nil, rif, warmRIF, &warmTies) {
			warm, warmSlot, warmAt, warmRIF = e, i, at, rif
		}
	}
	e, slot, at := warm, warmSlot, warmAt
	if first != nil {
		e, slot, at = first, firstSlot, firstAt
		limit := minLat * s.cfg.Tolerance
		var cold *prequalProbe
		var coldRIF float64
		coldTies := 0
		for i := range s.slots {
			c, cAt, rif := p.candidate(i, now)
			if c == nil || rif > hot || c.latency > limit {
				continue
			}
			if drawLeast(s.env.Rand, cold != nil, rif, coldRIF, &coldTies) {
				cold, coldRIF, slot, at = c, rif, i, cAt
			}
		}
		if cold != nil {
			e = cold
		} else {
			slot, at = firstSlot, firstAt
		}
	}
	if e == nil {
		return p.fallback(), nil
	}
	if e.uses.Add(1) >= e.budget {
		s.slots[slot].CompareAndSwap(e, nil)
	}
	return p.replicas[at], nil
}

// drawLeast reports whether a candidate of key k takes the place of the
// best so far (key best; have is false while there is none): a lower key
// always, an equal one with probability 1/ties, *ties counting the equal
// candidates seen (reservoir sampling, so equal ones are drawn uniformly).
func drawLeast(r Rand, have bool, k, best float64, ties *int) bool {
	switch {
	case !have || k < best:
		*ties = 1
		return true
	case k == best:
		*ties++
		return r.IntN(*ties) == 0
	}
	return false
}

// candidate is slot i's probe when it can route a pick, with its
// replica's position and the RIF it counts with; a nil probe otherwise.
func (p *prequalPicker) candidate(i int, now int64) (*prequalProbe, int, float64) {
	e := p.s.slots[i].Load()
	if e == nil || !p.s.usable(e, now) {
		return nil, -1, 0
	}
	at, ok := p.index[e.id]
	if !ok {
		return nil, -1, 0
	}
	return e, at, max(e.rif, p.replicas[at].Inflight())
}

// fallback is the better of two random replicas by calls in flight, among
// those not failing, or among all when every one is.
func (p *prequalPicker) fallback() *Replica {
	failing := *p.s.failing.Load()
	n := len(p.replicas)
	if len(failing) > 0 {
		n = 0
		for _, r := range p.replicas {
			if !failing[r.ID] {
				n++
			}
		}
		if n == 0 {
			failing, n = nil, len(p.replicas)
		}
	}
	if n == 1 {
		return p.nth(failing, 0)
	}
	i, j := twoDistinct(p.s.env.Rand, n)
	a, b := p.nth(failing, i), p.nth(failing, j)
	if b.Inflight() < a.Inflight() {
		return b
	}
	return a
}

// nth is the replica at k among those not in failing; k must be below
// their count.
func (p *prequalPicker) nth(failing map[string]bool, k int) *Replica {
	if len(failing) == 0 {
		return p.replicas[k]
	}
	var r *Replica
	for _, r = range p.replicas {
		if failing[r.ID] {
			continue
		}
		if k == 0 {
			break
		}
		k--
	}
	return r
}
