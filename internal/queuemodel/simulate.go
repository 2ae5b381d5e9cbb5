package queuemodel

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Policy is how a call arriving now picks its server.
type Policy int

const (
	// Random sends each call to a server drawn uniformly: n independent
	// M/M/1 processor-sharing queues (Poisson splitting).
	Random Policy = iota
	// ShortestQueue sends each call to the server with the fewest calls
	// in progress (join the shortest queue; ties go to the first in an
	// order drawn per call), as least-connections does.
	ShortestQueue
	// LeastDelay sends a call of size x to the server where it adds the
	// least to the sum of all calls' response times, knowing the
	// remaining work r_i of every call there: under processor sharing
	// the new call takes x + Σ min(r_i, x) to finish and delays each
	// call there by min(r_i, x), so the server of least Σ min(r_i, x)
	// (the new call's own completion time, too). It knows more than any
	// balancer does (each call's exact remaining work): a greedy rule,
	// not a proven optimum, but a high mark for a dispatcher in the
	// model.
	LeastDelay
	// HeldFIFO holds calls at the dispatcher while every server has
	// Config.Slots calls in progress, and sends the longest-waiting one
	// to a server as soon as one of its calls finishes; a call that finds
	// room goes to the server with room that has the fewest calls. With
	// one slot it is the M/M/n queue. Seed 004 §IV.B's model: "every
	// server can execute maximum k tasks in parallel. Tasks will be
	// queued until the running tasks are less than k".
	HeldFIFO
	// HeldLeastCost is HeldFIFO serving the smallest held call first
	// (shortest job first, sizes known exactly), as a front door with
	// queue order cost does from each call's Fulcrum-Cost.
	HeldLeastCost
)

func (p Policy) String() string {
	switch p {
	case Random:
		return "random"
	case ShortestQueue:
		return "shortest-queue"
	case LeastDelay:
		return "least-delay"
	case HeldFIFO:
		return "held-fifo"
	case HeldLeastCost:
		return "held-least-cost"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

func (p Policy) validate() error {
	if p < Random || p > HeldLeastCost {
		return fmt.Errorf("queuemodel: unknown policy %d", int(p))
	}
	return nil
}

// Config is one simulation. Sizes are in units of the mean call size, so
// figures are response times over the mean service time.
type Config struct {
	// Servers is n, in [1, 1024].
	Servers int
	// Utilization is ρ, the offered load as a share of the n servers'
	// capacity, in (0, 1).
	Utilization float64
	// Calls is the number of calls measured; 0 takes DefaultCalls. At
	// most 1e8.
	Calls int
	// Rounds, when 0, measures the calls in one run after a warm-up of a
	// tenth as many that are not measured: the steady state. When ≥ 1
	// the calls are split into that many runs, each starting from idle
	// servers and measuring every call, as a bench sample split into
	// rounds is. At most Calls.
	Rounds int
	// Seed selects the workload; 0 is a fixed default.
	Seed uint64
	// Slots is the calls a server takes at once under the held policies
	// (max_inflight), in [1, 1024]; 0 takes 1. Other policies ignore it.
	Slots int
	// Quota, when its Period is above 0, makes every server a CPU-quota
	// server instead of one of constant speed. Zero: processor sharing at
	// speed 1, the paper's model.
	Quota Quota
}

// Quota models a server held to a share of a core by a CFS bandwidth
// quota, as the testbed's replicas are (cgroup cpu.cfs_quota_us over
// cpu.cfs_period_us, one Go P): the server is a whole core, speed 1/Cores,
// shared among its calls, but each period it may only work Period units
// (its long-run capacity, 1 unit per unit of time, as the constant-speed
// server's); once spent it stops until the next period, and what is not
// spent is lost. Every server's periods start at a phase of its own,
// drawn once. Times are in units of the mean call's service time at the
// average speed (its CPU time over Cores).
type Quota struct {
	// Cores is the server's share of a core, in (0, 1].
	Cores float64
	// Period is the CFS period in units of the mean service time, in
	// (0, 1e6]; 0 disables the quota.
	Period float64
}

// DefaultCalls is Config.Calls when 0: enough for the mean response time
// at ρ 0.9 to settle within about half a percent (see the tests).
const DefaultCalls = 1_000_000

func (c Config) validate() error {
	if c.Servers < 1 || c.Servers > 1024 {
		return fmt.Errorf("queuemodel: servers %d, must be in [1, 1024]", c.Servers)
	}
	if !(c.Utilization > 0 && c.Utilization < 1) {
		return fmt.Errorf("queuemodel: utilization %v, must be in (0, 1)", c.Utilization)
	}
	if c.Calls < 0 || c.Calls > 1e8 {
		return fmt.Errorf("queuemodel: calls %d, must be in [0, 1e8] (0: %d)", c.Calls, DefaultCalls)
	}
	if calls := cmp.Or(c.Calls, DefaultCalls); c.Rounds < 0 || c.Rounds > calls {
		return fmt.Errorf("queuemodel: rounds %d, must be in [0, calls %d]", c.Rounds, calls)
	}
	if c.Slots < 0 || c.Slots > 1024 {
		return fmt.Errorf("queuemodel: slots %d, must be in [0, 1024] (0: 1)", c.Slots)
	}
	if q := c.Quota; q.Period != 0 || q.Cores != 0 {
		if !(q.Period > 0 && q.Period <= 1e6) {
			return fmt.Errorf("queuemodel: quota period %v, must be in (0, 1e6]", q.Period)
		}
		if !(q.Cores > 0 && q.Cores <= 1) {
			return fmt.Errorf("queuemodel: quota cores %v, must be in (0, 1]", q.Cores)
		}
	}
	return nil
}

// MeanResponse simulates cfg under p and returns the measured calls' mean
// response time over the mean call size (E[T]/E[S]).
func MeanResponse(cfg Config, p Policy) (float64, error) {
	if err := errors.Join(cfg.validate(), p.validate()); err != nil {
		return 0, err
	}
	cfg.Calls = cmp.Or(cfg.Calls, DefaultCalls)
	return simulate(cfg, p), nil
}

// simulate is MeanResponse of a valid cfg.
func simulate(cfg Config, p Policy) float64 {
	s := newSim(cfg, p)
	if cfg.Rounds == 0 {
		sum, n := s.run(cfg.Calls/10, cfg.Calls)
		return sum / float64(n)
	}
	var sum float64
	var n int
	for r := range cfg.Rounds {
		// Round r measures its share of the calls, the first rounds
		// one more when they do not divide evenly.
		calls := cfg.Calls / cfg.Rounds
		if r < cfg.Calls%cfg.Rounds {
			calls++
		}
		clear(s.servers)
		s.startPeriods()
		s.held.calls = s.held.calls[:0]
		rs, rn := s.run(0, calls)
		sum += rs
		n += rn
	}
	return sum / float64(n)
}

// ReductionSpread simulates samples samples of cfg's size (Calls in
// Rounds), with seeds cfg.Seed+1 … cfg.Seed+samples, each under p and
// under Random on the same calls, as the bench compares them, and returns
// their reductions 1 − mean_p/mean_random in increasing order: how far a
// measured reduction can stray from Reduction's by the luck of the calls
// alone. samples is in [1, 10000].
func ReductionSpread(cfg Config, p Policy, samples int) ([]float64, error) {
	if samples < 1 || samples > 10000 {
		return nil, fmt.Errorf("queuemodel: samples %d, must be in [1, 10000]", samples)
	}
	if err := errors.Join(cfg.validate(), p.validate()); err != nil {
		return nil, err
	}
	cfg.Calls = cmp.Or(cfg.Calls, DefaultCalls)
	out := make([]float64, samples)
	for i := range out {
		c := cfg
		c.Seed = cfg.Seed + uint64(i) + 1
		out[i] = 1 - simulate(c, p)/simulate(c, Random)
	}
	slices.Sort(out)
	return out, nil
}

// Reduction is 1 − E[T]/E[T_random]: how far p's mean response time is
// below random dispatch's, the remoting bench's figure. Random's is the
// exact M/M/1 processor-sharing mean 1/(1 − ρ), not simulated, so only
// p's sampling error enters.
func Reduction(cfg Config, p Policy) (float64, error) {
	t, err := MeanResponse(cfg, p)
	if err != nil {
		return 0, err
	}
	return 1 - t*(1-cfg.Utilization), nil
}

// server is one processor-sharing server. Its virtual time v is the
// service each call in progress has received since the server was
// created (it grows at speed/k with k calls in progress); a call of size
// x arriving at virtual time v finishes when v reaches v+x, its tag.
// Under a quota, budget is the work it may still do in this period and
// refill the time the next period starts.
type server struct {
	v      float64
	calls  callHeap
	budget float64
	refill float64
}

// call is a call in progress: its tag and its arrival time (negative
// for a warm-up call, which is not measured).
type call struct{ tag, arrived float64 }

// callHeap orders calls by tag, the next to finish first.
type callHeap []call

func (h callHeap) Len() int           { return len(h) }
func (h callHeap) Less(i, j int) bool { return h[i].tag < h[j].tag }
func (h callHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *callHeap) Push(x any)        { *h = append(*h, x.(call)) }
func (h *callHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type sim struct {
	cfg     Config
	policy  Policy
	servers []server
	// held are the calls the dispatcher holds (held policies), in the
	// order it serves them.
	held heldHeap
	// work draws the arrivals and sizes, pick the dispatch choices: two
	// streams, so every policy sees the same workload.
	work, pick *rand.Rand
	// quota is whether the servers run under Config.Quota, fast their
	// speed while they have budget.
	quota bool
	fast  float64
	phase *rand.Rand
}

func newSim(cfg Config, p Policy) *sim {
	s := &sim{
		cfg:     cfg,
		policy:  p,
		servers: make([]server, cfg.Servers),
		work:    rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		pick:    rand.New(rand.NewPCG(cfg.Seed, 0xbf58476d1ce4e5b9)),
	}
	s.held.leastCost = p == HeldLeastCost
	if q := cfg.Quota; q.Period > 0 {
		s.quota, s.fast = true, 1/q.Cores
		// The phases come from a stream of their own: the same for
		// every policy, and the workload's streams untouched.
		s.phase = rand.New(rand.NewPCG(cfg.Seed, 0x94d049bb133111eb))
		s.startPeriods()
	}
	return s
}

// startPeriods gives every server a full budget and the first end of its
// period at a phase of its own, for a run starting at time 0.
func (s *sim) startPeriods() {
	if !s.quota {
		return
	}
	p := s.cfg.Quota.Period
	for i := range s.servers {
		s.servers[i].budget = p
		s.servers[i].refill = (1 - s.phase.Float64()) * p // in (0, p]
	}
}

// speed is the rate at which server sv works now: 1, or under a quota
// its core's speed while it has budget and 0 once spent.
func (s *sim) speed(sv *server) float64 {
	if !s.quota {
		return 1
	}
	if sv.budget > 0 {
		return s.fast
	}
	return 0
}

// nextQuotaEvent is the earliest time from now at which a server's
// budget runs out or its next period starts (infinity without a quota),
// and the server whose budget runs out then (-1: a period starts).
func (s *sim) nextQuotaEvent(now float64) (at float64, spent int) {
	at, spent = math.Inf(1), -1
	if !s.quota {
		return at, spent
	}
	for i := range s.servers {
		sv := &s.servers[i]
		if sv.refill < at {
			at, spent = sv.refill, -1
		}
		if len(sv.calls) > 0 && sv.budget > 0 {
			if t := now + sv.budget/s.fast; t < at {
				at, spent = t, i
			}
		}
	}
	return at, spent
}

// refillQuotas starts a new period, with a full budget, on every server
// whose period ends by now.
func (s *sim) refillQuotas(now float64) {
	if !s.quota {
		return
	}
	p := s.cfg.Quota.Period
	for i := range s.servers {
		sv := &s.servers[i]
		if sv.refill <= now {
			sv.budget = p
			sv.refill += p * math.Floor((now-sv.refill)/p+1)
		}
	}
}

// run sends warm calls that are not measured and then measured ones from
// idle servers, until every measured call has finished, and returns the
// sum of the measured calls' response times and their number.
func (s *sim) run(warm, measured int) (sum float64, finished int) {
	lambda := s.cfg.Utilization * float64(s.cfg.Servers)
	total := warm + measured
	now := 0.0
	nextArrival := s.work.ExpFloat64() / lambda
	arrivals := 0
	for finished < measured {
		// The next completion: the least tag's remaining service, k
		// times over.
		done, at := -1, math.Inf(1)
		for i := range s.servers {
			sv := &s.servers[i]
			if k := len(sv.calls); k > 0 {
				if v := s.speed(sv); v > 0 {
					if t := now + (sv.calls[0].tag-sv.v)*float64(k)/v; t < at {
						done, at = i, t
					}
				}
			}
		}
		if arrivals == total {
			nextArrival = math.Inf(1)
		}
		next := min(at, nextArrival)
		if q, spent := s.nextQuotaEvent(now); q < next {
			// A budget runs out or a period starts first. The spent
			// budget is set to 0 outright: what advance leaves of it
			// is rounding, and at a large now a sliver of it would
			// make an event that no step of time can reach.
			s.advance(q - now)
			now = q
			if spent >= 0 {
				s.servers[spent].budget = 0
			}
			s.refillQuotas(now)
			continue
		}
		s.advance(next - now)
		now = next
		s.refillQuotas(now)
		if done >= 0 && at <= nextArrival {
			sv := &s.servers[done]
			c := heap.Pop(&sv.calls).(call)
			sv.v = max(sv.v, c.tag) // the call got all its service, rounding aside
			if c.arrived >= 0 {
				sum += now - c.arrived
				finished++
			}
			if s.held.Len() > 0 {
				h := heap.Pop(&s.held).(heldCall)
				heap.Push(&sv.calls, call{tag: sv.v + h.size, arrived: h.arrived})
			}
			continue
		}
		x := s.work.ExpFloat64()
		arrived := now
		if arrivals < warm {
			arrived = -1
		}
		arrivals++
		nextArrival = now + s.work.ExpFloat64()/lambda
		i := s.choose(x)
		if i < 0 {
			s.held.seq++
			heap.Push(&s.held, heldCall{size: x, arrived: arrived, seq: s.held.seq})
			continue
		}
		sv := &s.servers[i]
		heap.Push(&sv.calls, call{tag: sv.v + x, arrived: arrived})
	}
	return sum, finished
}

// advance moves every server's virtual time dt of real time on, and
// under a quota spends the budget of every server at work.
func (s *sim) advance(dt float64) {
	for i := range s.servers {
		sv := &s.servers[i]
		k := len(sv.calls)
		if k == 0 {
			continue
		}
		if !s.quota {
			sv.v += dt / float64(k)
			continue
		}
		if sv.budget > 0 {
			sv.v += dt * s.fast / float64(k)
			sv.budget = max(sv.budget-dt*s.fast, 0)
		}
	}
}

// choose is the policy's server for a call of size x, or -1 when a held
// policy holds it.
func (s *sim) choose(x float64) int {
	n := len(s.servers)
	start := s.pick.IntN(n)
	if s.policy == Random {
		return start
	}
	best, bestCost := start, math.Inf(1)
	if s.policy == HeldFIFO || s.policy == HeldLeastCost {
		best = -1
	}
	for o := range n {
		i := (start + o) % n
		sv := &s.servers[i]
		var cost float64
		switch s.policy {
		case ShortestQueue:
			cost = float64(len(sv.calls))
		case HeldFIFO, HeldLeastCost:
			if len(sv.calls) >= max(s.cfg.Slots, 1) {
				continue
			}
			cost = float64(len(sv.calls))
		case LeastDelay:
			for _, c := range sv.calls {
				cost += min(c.tag-sv.v, x)
			}
		}
		if cost < bestCost {
			best, bestCost = i, cost
		}
	}
	return best
}

// heldCall is a call the dispatcher holds: its size, its arrival time
// (negative for a warm-up call) and its place in the arrival order.
type heldCall struct {
	size, arrived float64
	seq           uint64
}

// heldHeap orders held calls by arrival, or by size first when
// leastCost.
type heldHeap struct {
	calls     []heldCall
	leastCost bool
	seq       uint64
}

func (h heldHeap) Len() int { return len(h.calls) }
func (h heldHeap) Less(i, j int) bool {
	a, b := h.calls[i], h.calls[j]
	if h.leastCost && a.size != b.size {
		return a.size < b.size
	}
	return a.seq < b.seq
}
func (h heldHeap) Swap(i, j int) { h.calls[i], h.calls[j] = h.calls[j], h.calls[i] }
func (h *heldHeap) Push(x any)   { h.calls = append(h.calls, x.(heldCall)) }
func (h *heldHeap) Pop() any {
	x := h.calls[len(h.calls)-1]
	h.calls = h.calls[:len(h.calls)-1]
	return x
}
