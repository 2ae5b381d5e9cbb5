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
	// one slot it is the M/M/n queue. The .NET Remoting paper's model (§IV.B): "every
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
	// Parallel is the calls a server works on at once, sharing its
	// speed, in [0, 1024]; the calls sent beyond it wait at the server
	// in arrival order. The .NET Remoting paper §IV.B: "every server can execute
	// maximum k tasks in parallel. Tasks will be queued until the
	// running tasks are less than k". 0: no limit, processor sharing
	// over every call; 1: first come, first served. LeastDelay knows
	// only processor sharing and takes 0.
	Parallel int
	// Handoff is the time a call takes from the dispatcher to its server,
	// in [0, 1e3] units of the mean service time: the server starts it
	// that long after it was sent, and a held call sent when a slot
	// frees leaves the server that long without it. 0: at once.
	Handoff float64
	// Lead, under the held policies, frees a call's slot early, when its
	// remaining work falls to Lead (in [0, 1e3]), so that the next held
	// call reaches the server about when it finishes (Handoff). 0: a
	// slot frees when its call finishes.
	Lead float64
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
	// Machine is the cores the servers share, as the testbed's replicas
	// share the machine's CPUs (with the balancer and the clients, whose
	// use of them this leaves out): when more servers have budget and
	// work than Machine, they split its cores evenly instead of each
	// running at a whole core's speed. At least Servers × Cores, so that
	// every quota stays reachable, and at most 1024; 0: a core for every
	// server.
	Machine float64
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
	if c.Parallel < 0 || c.Parallel > 1024 {
		return fmt.Errorf("queuemodel: parallel %d, must be in [0, 1024] (0: no limit)", c.Parallel)
	}
	if !(c.Handoff >= 0 && c.Handoff <= 1e3) {
		return fmt.Errorf("queuemodel: handoff %v, must be in [0, 1e3]", c.Handoff)
	}
	if !(c.Lead >= 0 && c.Lead <= 1e3) {
		return fmt.Errorf("queuemodel: lead %v, must be in [0, 1e3]", c.Lead)
	}
	if q := c.Quota; q.Period != 0 || q.Cores != 0 {
		if !(q.Period > 0 && q.Period <= 1e6) {
			return fmt.Errorf("queuemodel: quota period %v, must be in (0, 1e6]", q.Period)
		}
		if !(q.Cores > 0 && q.Cores <= 1) {
			return fmt.Errorf("queuemodel: quota cores %v, must be in (0, 1]", q.Cores)
		}
		if least := float64(c.Servers) * q.Cores; q.Machine != 0 && !(q.Machine >= least && q.Machine <= 1024) {
			return fmt.Errorf("queuemodel: quota machine %v cores, must be 0 (a core per server) or in [servers × cores = %v, 1024]", q.Machine, least)
		}
	}
	return nil
}

// MeanResponse simulates cfg under p and returns the measured calls' mean
// response time over the mean call size (E[T]/E[S]).
func MeanResponse(cfg Config, p Policy) (float64, error) {
	if err := validate(cfg, p); err != nil {
		return 0, err
	}
	cfg.Calls = cmp.Or(cfg.Calls, DefaultCalls)
	return simulate(cfg, p), nil
}

// validate checks cfg and p and that p can run on cfg's servers.
func validate(cfg Config, p Policy) error {
	if err := errors.Join(cfg.validate(), p.validate()); err != nil {
		return err
	}
	if p == LeastDelay && cfg.Parallel != 0 {
		return fmt.Errorf("queuemodel: parallel %d with least-delay, which knows only processor sharing over every call: must be 0", cfg.Parallel)
	}
	return nil
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
		for i := range s.servers {
			s.servers[i] = server{calls: s.servers[i].calls[:0], waiting: s.servers[i].waiting[:0]}
		}
		s.transit = s.transit[:0]
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
	if err := validate(cfg, p); err != nil {
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
// refill the time the next period starts. waiting are the calls beyond
// Config.Parallel, in arrival order.
// transit counts the calls sent to it that have not reached it yet, and
// released the calls in progress whose slots Config.Lead freed early
// (under processor sharing the least remaining first, so those of the
// least tags).
type server struct {
	v        float64
	calls    callHeap
	waiting  []waitingCall
	transit  int
	released int
	budget   float64
	refill   float64
}

// waitingCall is a call waiting at a server for one in progress there to
// finish: its size and arrival time.
type waitingCall struct{ size, arrived float64 }

// load is the calls sent to the server and not finished.
func (sv *server) load() int { return len(sv.calls) + len(sv.waiting) + sv.transit }

// occupied is the slots the server's calls take: its load but the calls
// released early.
func (sv *server) occupied() int { return sv.load() - sv.released }

// nextRelease is the tag of the call in progress whose slot Config.Lead
// frees next, the least tag above the released calls', and false when
// every call in progress is released.
func (sv *server) nextRelease() (float64, bool) {
	if sv.released >= len(sv.calls) {
		return 0, false
	}
	// Calls are few under the held policies: a sort of the tags is
	// cheaper to keep than a second heap.
	tags := make([]float64, len(sv.calls))
	for i, c := range sv.calls {
		tags[i] = c.tag
	}
	slices.Sort(tags)
	return tags[sv.released], true
}

// inTransit is a call on its way to a server.
type inTransit struct {
	at, size, arrived float64
	server            int
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
	// speed while they have budget and a core to themselves, and share
	// the part of a core each has while more servers run than
	// Quota.Machine has cores (1 otherwise; set by share at every event).
	quota bool
	fast  float64
	share float64
	phase *rand.Rand
	// transit are the calls on their way to a server (Config.Handoff), in
	// the order they arrive there.
	transit []inTransit
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
	s.held.policy = p == HeldFIFO || p == HeldLeastCost
	if q := cfg.Quota; q.Period > 0 {
		s.quota, s.fast, s.share = true, 1/q.Cores, 1
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
// its part of a core's speed while it has budget and 0 once spent.
func (s *sim) speed(sv *server) float64 {
	if !s.quota {
		return 1
	}
	if sv.budget > 0 {
		return s.fast * s.share
	}
	return 0
}

// setShare sets the part of a core every running server gets until the
// next event: the servers with work and budget split Quota.Machine's
// cores evenly, at most one each.
func (s *sim) setShare() {
	m := s.cfg.Quota.Machine
	if !s.quota || m == 0 {
		return
	}
	running := 0
	for i := range s.servers {
		if sv := &s.servers[i]; len(sv.calls) > 0 && sv.budget > 0 {
			running++
		}
	}
	s.share = min(1, m/float64(max(running, 1)))
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
			if t := now + sv.budget/(s.fast*s.share); t < at {
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
		s.setShare()
		// The next completion: the least tag's remaining service, k
		// times over; and the next slot Config.Lead frees early.
		done, at := -1, math.Inf(1)
		rel, relAt := -1, math.Inf(1)
		for i := range s.servers {
			sv := &s.servers[i]
			k := len(sv.calls)
			if k == 0 {
				continue
			}
			v := s.speed(sv)
			if v > 0 {
				if t := now + (sv.calls[0].tag-sv.v)*float64(k)/v; t < at {
					done, at = i, t
				}
			}
			if s.cfg.Lead > 0 && s.held.policy {
				if tag, ok := sv.nextRelease(); ok {
					if left := tag - sv.v - s.cfg.Lead; left <= 0 {
						rel, relAt = i, now
					} else if v > 0 {
						if t := now + left*float64(k)/v; t < relAt {
							rel, relAt = i, t
						}
					}
				}
			}
		}
		if arrivals == total {
			nextArrival = math.Inf(1)
		}
		transitAt := math.Inf(1)
		if len(s.transit) > 0 {
			transitAt = s.transit[0].at
		}
		next := min(at, nextArrival, relAt, transitAt)
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
		switch {
		case relAt <= next:
			s.servers[rel].released++
			s.dispatchHeld(now)
		case transitAt <= next:
			c := s.transit[0]
			s.transit = append(s.transit[:0], s.transit[1:]...)
			sv := &s.servers[c.server]
			sv.transit--
			s.start(sv, c.size, c.arrived)
		case at <= nextArrival:
			sv := &s.servers[done]
			c := heap.Pop(&sv.calls).(call)
			sv.v = max(sv.v, c.tag) // the call got all its service, rounding aside
			if sv.released > 0 {
				// The released calls are those of the least tags.
				sv.released--
			}
			if c.arrived >= 0 {
				sum += now - c.arrived
				finished++
			}
			if len(sv.waiting) > 0 {
				w := sv.waiting[0]
				sv.waiting = append(sv.waiting[:0], sv.waiting[1:]...)
				heap.Push(&sv.calls, call{tag: sv.v + w.size, arrived: w.arrived})
			}
			s.dispatchHeld(now)
		default:
			x := s.work.ExpFloat64()
			arrived := now
			if arrivals < warm {
				arrived = -1
			}
			arrivals++
			nextArrival = now + s.work.ExpFloat64()/lambda
			if s.held.Len() == 0 {
				if i := s.choose(x); i >= 0 {
					s.send(i, x, arrived, now)
					continue
				}
			}
			s.held.seq++
			heap.Push(&s.held, heldCall{size: x, arrived: arrived, seq: s.held.seq})
			s.dispatchHeld(now)
		}
	}
	return sum, finished
}

// dispatchHeld sends held calls, first in the held order first, to the
// servers with room until none has room or no call is held.
func (s *sim) dispatchHeld(now float64) {
	for s.held.Len() > 0 {
		i := s.choose(s.held.calls[0].size)
		if i < 0 {
			return
		}
		h := heap.Pop(&s.held).(heldCall)
		s.send(i, h.size, h.arrived, now)
	}
}

// send sends a call of size x to server i: it starts there after
// Config.Handoff.
func (s *sim) send(i int, x, arrived, now float64) {
	if s.cfg.Handoff == 0 {
		s.start(&s.servers[i], x, arrived)
		return
	}
	s.servers[i].transit++
	s.transit = append(s.transit, inTransit{at: now + s.cfg.Handoff, size: x, arrived: arrived, server: i})
}

// start starts a call of size x on sv, or queues it there when sv works
// on Config.Parallel calls already.
func (s *sim) start(sv *server, x, arrived float64) {
	if p := s.cfg.Parallel; p > 0 && len(sv.calls) >= p {
		sv.waiting = append(sv.waiting, waitingCall{size: x, arrived: arrived})
		return
	}
	heap.Push(&sv.calls, call{tag: sv.v + x, arrived: arrived})
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
			v := s.fast * s.share
			sv.v += dt * v / float64(k)
			sv.budget = max(sv.budget-dt*v, 0)
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
			cost = float64(sv.load())
		case HeldFIFO, HeldLeastCost:
			if sv.occupied() >= max(s.cfg.Slots, 1) {
				continue
			}
			cost = float64(sv.occupied())
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
	// policy is whether the policy holds calls at all.
	policy bool
	seq    uint64
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
