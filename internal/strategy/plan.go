package strategy

import (
	"cmp"
	"math"
	"slices"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The move planner: fulcrum's improvement over TAO's rebalancing, shared by
// the adaptive strategies.
//
// TAO answers an overloaded replica with a `high` advisory and lets the
// monitor send back "some" clients, which land wherever the strategy picks;
// clients are bound whole and have different rates, so this overshoots and
// the loads "fluctuated for a short period" before settling (the TAO paper §4.3).
// Monitors here report their busiest bound clients with their rates, so
// the planner can decide which client goes from which replica to which:
// the assignment of the listed clients to replicas that brings every
// replica's load per unit of weight closest to the group mean. That is a
// small assignment (multiprocessor scheduling) problem, NP-hard in general
// but tiny in practice:
//
//   - a greedy local search from the current assignment first: repeatedly
//     make the single move or swap between the most and the least loaded
//     replicas that lowers the sum of squared deviations most. At its fixed
//     point, with equal weights, the most loaded replica holding movable
//     clients exceeds the least loaded replica by at most its smallest
//     movable client (otherwise moving that client would lower the sum), so
//     the spread is at most the largest movable client over the mean;
//   - then, with at most planExactClients movable clients, an exact branch
//     and bound seeded with the greedy plan, within MaxNodes search nodes
//     (Plan.Exact says whether it finished).
//
// PlanMoves ranks plans by cost = CV + c·moves, the CV being the weighted
// coefficient of variation of the replicas' loads per unit of weight:
// among plans about as balanced (measured rates are noisy), the one with
// fewer moves wins; equal costs go to the smaller spread (the largest
// deviation from the mean, as a fraction of it). The CV and not the spread
// is the score because one client bound whole can pin the spread: with a
// client of 300 calls/s among clients of 50, its replica is the largest
// deviation whatever the plan, every plan has the same spread, and a
// planner ranking by spread leaves the other replicas as unbalanced as they
// happen to be. The CV counts every replica.
//
// The thresholds are given in spread units, the tolerance's: a move must
// buy MoveCost and a plan must gain more than MinImprovement of spread.
// They are converted to CV units by 1/sqrt(n−1) for n replicas, the ratio
// of CV to spread when one replica is off the mean by x and the others
// share the difference equally (CV = x/sqrt(n−1), spread = x): a plan is
// worth making when it gains as much as narrowing one outlier by
// MinImprovement would. A group at its best reachable balance stays put
// (the TAO paper's balancing paroxysms, §3.3.4).
//
// OptimalAssignment, which answers "how close to the mean can every
// replica get", still ranks by spread.

// PlanReplica is one replica as the move planner sees it.
type PlanReplica struct {
	ID string
	// Weight is the replica's relative capacity; a weight that is not
	// finite and > 0 counts as 1.
	Weight float64
	// Load is the replica's current load, in load units.
	Load float64
	// Clients are the bound clients that may be moved, each with the load
	// it brings (Rate, in load units). The part of Load they do not cover
	// is residual and stays where it is. A client listed by more than one
	// replica (caught mid-move) is not moved and counts as residual.
	Clients []protocol.ClientRate
}

// PlanOptions tune PlanMoves.
type PlanOptions struct {
	// MinImprovement is how much a plan must narrow the spread (a fraction
	// of the mean: 0.05 is five points) to be returned.
	MinImprovement float64
	// MoveCost is the spread one move must buy (a fraction of the mean);
	// 0 means DefaultMoveCost.
	MoveCost float64
	// MaxNodes bounds the exact search; 0 means DefaultPlanNodes.
	MaxNodes int
	// MinCVGain, when > 0, is how much a plan must lower the CV (in CV
	// units, not converted) to be returned, besides MinImprovement.
	MinCVGain float64
}

// Plan is a set of moves and what they are expected to achieve.
type Plan struct {
	// Moves are the planned rebindings, by source replica then decreasing
	// rate. Empty when no plan narrows the spread enough.
	Moves []Move
	// Before is the spread now; After the spread once Moves are done
	// (Before when there are none); Best the spread of the best plan found,
	// returned or not.
	Before, After, Best float64
	// CVBefore, CVAfter and CVBest are the same for the weighted
	// coefficient of variation, by which plans are ranked.
	CVBefore, CVAfter, CVBest float64
	// Loads are the projected loads after Moves, by input index.
	Loads []float64
	// Exact is true when Best is proven optimal for the listed clients.
	Exact bool
}

const (
	// DefaultPlanNodes bounds the exact search when PlanOptions.MaxNodes
	// is 0: a few milliseconds of work.
	DefaultPlanNodes = 50_000
	// DefaultMoveCost is PlanOptions.MoveCost's default: a move must
	// narrow the spread by one point of the mean.
	DefaultMoveCost = 0.01
	// planExactClients is the most movable clients the exact search is
	// tried on.
	planExactClients = 64
)

// PlanMoves plans which listed clients to move so that every replica ends
// closest to the weighted mean. See the comment at the top of plan.go.
func PlanMoves(rs []PlanReplica, opt PlanOptions) Plan {
	n := len(rs)
	seen := make(map[string]int)
	for _, r := range rs {
		for _, c := range r.Clients {
			if planRate(c.Rate) > 0 {
				seen[c.ID]++
			}
		}
	}
	p := &planProblem{n: n, w: make([]float64, n), inv: make([]float64, n), base: make([]float64, n), moveCost: opt.MoveCost, byCV: true}
	if !(p.moveCost > 0) {
		p.moveCost = DefaultMoveCost
	}
	toCV := 1.0
	if n > 2 {
		toCV = 1 / math.Sqrt(float64(n-1))
	}
	p.moveCost *= toCV
	var items []planItem
	for i, r := range rs {
		p.w[i] = planWeight(r.Weight)
		p.inv[i] = 1 / p.w[i]
		movable := 0.0
		for _, c := range r.Clients {
			if x := planRate(c.Rate); x > 0 && seen[c.ID] == 1 {
				items = append(items, planItem{id: c.ID, rate: x, start: i})
				movable += x
			}
		}
		p.base[i] = max(0, planRate(r.Load)-movable)
	}
	p.setItems(items)
	current := make([]int, len(p.items))
	for k, it := range p.items {
		current[k] = it.start
	}
	plan := Plan{Loads: p.loads(current)}
	if n < 2 || p.mean <= 0 {
		return plan
	}
	cur := p.evaluate(current)
	plan.Before, plan.After, plan.Best = cur.spread, cur.spread, cur.spread
	plan.CVBefore, plan.CVAfter, plan.CVBest = cur.cv, cur.cv, cur.cv
	if len(p.items) == 0 {
		plan.Exact = true
		return plan
	}
	best, exact := p.solve(current, opt.MaxNodes)
	plan.Best, plan.CVBest, plan.Exact = best.spread, best.cv, exact
	if best.moves == 0 || cur.cv-best.cv <= opt.MinImprovement*toCV ||
		(opt.MinCVGain > 0 && cur.cv-best.cv < opt.MinCVGain-planEps) {
		return plan
	}
	plan.After, plan.CVAfter = best.spread, best.cv
	plan.Loads = p.loads(best.assign)
	// By source replica in input order; items are by decreasing rate.
	bySource := make([][]Move, n)
	for k, it := range p.items {
		if to := best.assign[k]; to != it.start {
			bySource[it.start] = append(bySource[it.start], Move{Client: it.id, From: rs[it.start].ID, To: rs[to].ID, Rate: it.rate})
		}
	}
	for _, ms := range bySource {
		plan.Moves = append(plan.Moves, ms...)
	}
	return plan
}

// OptimalAssignment returns the assignment of clients with the given rates
// to replicas with the given weights (assignment[i] is the replica index
// of rates[i]) that minimises the spread, and that spread: the largest
// deviation of a replica's load per unit of weight from the weighted mean,
// as a fraction of the mean. It is exact for up to 64 clients (within
// DefaultPlanNodes search nodes), greedy beyond. The demo and the bench use
// it to know whether "every replica within ±10% of the mean" is reachable.
func OptimalAssignment(rates, weights []float64) (assignment []int, spread float64) {
	n := len(weights)
	assignment = make([]int, len(rates))
	if n == 0 {
		for i := range assignment {
			assignment[i] = -1
		}
		return assignment, 0
	}
	p := &planProblem{n: n, w: make([]float64, n), inv: make([]float64, n), base: make([]float64, n)}
	for i, w := range weights {
		p.w[i] = planWeight(w)
		p.inv[i] = 1 / p.w[i]
	}
	items := make([]planItem, len(rates))
	for i, r := range rates {
		items[i] = planItem{rate: planRate(r), start: -1, index: i}
	}
	p.setItems(items)
	if p.mean <= 0 {
		return assignment, 0
	}
	// Longest processing time first: each client, largest first, to the
	// replica it leaves least loaded per unit of weight.
	start := make([]int, len(p.items))
	loads := slices.Clone(p.base)
	for k, it := range p.items {
		j := 0
		for i := 1; i < n; i++ {
			if (loads[i]+it.rate)*p.inv[i] < (loads[j]+it.rate)*p.inv[j] {
				j = i
			}
		}
		start[k] = j
		loads[j] += it.rate
	}
	best, _ := p.solve(start, 0)
	for k, it := range p.items {
		assignment[it.index] = best.assign[k]
	}
	return assignment, best.spread
}

// Spread is the largest deviation of a replica's load per unit of weight
// from the weighted mean, as a fraction of the mean (0 when the mean is
// 0). A weight that is not finite and > 0 counts as 1; weights may be nil
// (all 1).
func Spread(loads, weights []float64) float64 {
	m := planMean(loads, weights)
	if m <= 0 {
		return 0
	}
	s := 0.0
	for i, l := range loads {
		s = max(s, math.Abs(l/planWeightAt(weights, i)-m))
	}
	return s / m
}

// CV is the weighted coefficient of variation of the loads per unit of
// weight: sqrt(Σ w·(L/w − m)² / Σ w) / m (0 when the mean is 0).
func CV(loads, weights []float64) float64 {
	m := planMean(loads, weights)
	if m <= 0 {
		return 0
	}
	sq, sw := 0.0, 0.0
	for i, l := range loads {
		w := planWeightAt(weights, i)
		d := l/w - m
		sq += w * d * d
		sw += w
	}
	return math.Sqrt(sq/sw) / m
}

func planMean(loads, weights []float64) float64 {
	sl, sw := 0.0, 0.0
	for i, l := range loads {
		sl += l
		sw += planWeightAt(weights, i)
	}
	if sw == 0 {
		return 0
	}
	return sl / sw
}

func planWeightAt(weights []float64, i int) float64 {
	if i < len(weights) {
		return planWeight(weights[i])
	}
	return 1
}

func planWeight(w float64) float64 {
	if !(w > 0) || math.IsInf(w, 1) {
		return 1
	}
	return w
}

// planRate is a rate or load as the planner uses it: not finite or
// negative counts as 0.
func planRate(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return 0
	}
	return x
}

// planItem is one movable client.
type planItem struct {
	id    string
	rate  float64
	start int // the replica it is on now; -1: none (OptimalAssignment)
	index int // position in OptimalAssignment's input
}

// planProblem is one instance: replicas with weights and residual loads,
// and items (clients) sorted by decreasing rate.
type planProblem struct {
	n      int
	w, inv []float64
	sw     float64 // Σ w
	base   []float64
	items  []planItem
	mean   float64
	// moveCost is the cost of one move, in the units of the score.
	moveCost float64
	// byCV ranks by CV, ties by spread (PlanMoves); otherwise by spread,
	// ties by the sum of squares (OptimalAssignment).
	byCV bool
}

// planSolution is an assignment of items to replicas and its figures.
type planSolution struct {
	assign []int
	spread float64
	sq     float64 // Σ w·(L/w − m)² / m²
	cv     float64 // sqrt(sq / Σ w)
	moves  int
	cost   float64 // score + moveCost·moves, the score being cv or spread
}

func (p *planProblem) setItems(items []planItem) {
	slices.SortStableFunc(items, func(a, b planItem) int {
		if c := cmp.Compare(b.rate, a.rate); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	p.items = items
	total, sw := 0.0, 0.0
	for i := range p.n {
		total += p.base[i]
		sw += p.w[i]
	}
	for _, it := range items {
		total += it.rate
	}
	p.sw = sw
	if sw > 0 {
		p.mean = total / sw
	}
}

func (p *planProblem) loads(assign []int) []float64 {
	loads := slices.Clone(p.base)
	for k, j := range assign {
		if j >= 0 {
			loads[j] += p.items[k].rate
		}
	}
	return loads
}

func (p *planProblem) evaluate(assign []int) planSolution {
	s := planSolution{assign: slices.Clone(assign)}
	s.spread, s.sq = p.figures(p.loads(assign))
	for k, j := range assign {
		if st := p.items[k].start; st >= 0 && j != st {
			s.moves++
		}
	}
	p.score(&s)
	return s
}

// score fills in s.cv and s.cost from s.spread, s.sq and s.moves.
func (p *planProblem) score(s *planSolution) {
	s.cv = math.Sqrt(s.sq / p.sw)
	s.cost = p.cost(s.spread, s.cv, s.moves)
}

func (p *planProblem) cost(spread, cv float64, moves int) float64 {
	if p.byCV {
		return cv + p.moveCost*float64(moves)
	}
	return spread + p.moveCost*float64(moves)
}

// figures returns the spread and the normalised sum of squares of loads.
func (p *planProblem) figures(loads []float64) (spread, sq float64) {
	for i, l := range loads {
		d := l*p.inv[i] - p.mean
		spread = max(spread, math.Abs(d))
		sq += p.w[i] * d * d
	}
	return spread / p.mean, sq / (p.mean * p.mean)
}

// planEps absorbs rounding when costs are compared.
const planEps = 1e-9

// better reports whether a ranks before b.
func (p *planProblem) better(a, b *planSolution) bool {
	if math.Abs(a.cost-b.cost) > planEps {
		return a.cost < b.cost
	}
	if p.byCV {
		return a.spread < b.spread-planEps
	}
	return a.sq < b.sq-planEps
}

// solve improves start by local search and, for small instances, exact
// search. It reports whether the result is proven optimal.
func (p *planProblem) solve(start []int, maxNodes int) (planSolution, bool) {
	greedy := slices.Clone(start)
	p.localSearch(greedy)
	best := p.evaluate(greedy)
	if s := p.evaluate(start); p.better(&s, &best) {
		best = s
	}
	if len(p.items) > planExactClients {
		return best, false
	}
	if maxNodes <= 0 {
		maxNodes = DefaultPlanNodes
	}
	b := newPlanSearch(p, &best, maxNodes)
	b.dfs(0)
	return best, !b.aborted
}

// localSearch improves assign in place: while some single move or swap of
// items between the most loaded replica holding items and the least loaded
// replica lowers the sum of squared deviations, it makes the one that
// lowers it most (preferring, at equal effect, fewer moves away from the
// items' start). Each round costs O(n + c·log c) for c items on the two
// replicas.
func (p *planProblem) localSearch(assign []int) {
	loads := p.loads(assign)
	members := make([][]int, p.n) // items on each replica
	for k, j := range assign {
		members[j] = append(members[j], k)
	}
	byRate := func(a, b int) int { return cmp.Compare(p.items[a].rate, p.items[b].rate) }
	for iter := 0; iter < 4*len(assign)+16; iter++ {
		hi, lo := -1, -1
		for i := range p.n {
			if len(members[i]) > 0 && (hi < 0 || loads[i]*p.inv[i] > loads[hi]*p.inv[hi]) {
				hi = i
			}
		}
		for i := range p.n {
			if i != hi && (lo < 0 || loads[i]*p.inv[i] < loads[lo]*p.inv[lo]) {
				lo = i
			}
		}
		if hi < 0 || lo < 0 {
			return
		}
		// Moving load t from hi to lo changes Σ L²/w by
		// (1/wh+1/wl)·(t² − 2·t·x*), x* = (Lh/wh − Ll/wl)/(1/wh+1/wl):
		// it improves for 0 < t < 2x*, most at t = x*.
		target := (loads[hi]*p.inv[hi] - loads[lo]*p.inv[lo]) / (p.inv[hi] + p.inv[lo])
		if target <= 0 {
			return
		}
		loItems := members[lo]
		slices.SortFunc(loItems, byRate)
		bestX, bestY := -1, -1
		bestGap, bestDm := math.Inf(1), 0
		consider := func(x, y int, t float64) {
			if t <= 0 || t >= 2*target {
				return
			}
			gap := math.Abs(t - target)
			dm := p.moveDelta(x, hi, lo)
			if y >= 0 {
				dm += p.moveDelta(y, lo, hi)
			}
			if gap < bestGap-1e-12*target || (gap <= bestGap+1e-12*target && dm < bestDm) {
				bestX, bestY, bestGap, bestDm = x, y, gap, dm
			}
		}
		for _, x := range members[hi] {
			rx := p.items[x].rate
			consider(x, -1, rx)
			// the lo items whose rates are closest to rx − target
			c, _ := slices.BinarySearchFunc(loItems, rx-target, func(k int, v float64) int { return cmp.Compare(p.items[k].rate, v) })
			if c > 0 {
				consider(x, loItems[c-1], rx-p.items[loItems[c-1]].rate)
			}
			if c < len(loItems) {
				consider(x, loItems[c], rx-p.items[loItems[c]].rate)
			}
		}
		if bestX < 0 {
			return
		}
		move := func(k, from, to int) {
			assign[k] = to
			loads[from] -= p.items[k].rate
			loads[to] += p.items[k].rate
			members[from] = slices.DeleteFunc(members[from], func(m int) bool { return m == k })
			members[to] = append(members[to], k)
		}
		move(bestX, hi, lo)
		if bestY >= 0 {
			move(bestY, lo, hi)
		}
	}
}

// moveDelta is the change in the move count when item k goes from replica
// from to replica to.
func (p *planProblem) moveDelta(k, from, to int) int {
	st := p.items[k].start
	switch {
	case st < 0:
		return 0
	case st == to:
		return -1
	case st == from:
		return 1
	}
	return 0
}

// planSearch is the branch and bound over items in decreasing rate order.
type planSearch struct {
	p         *planProblem
	best      *planSolution
	maxNodes  int
	nodes     int
	aborted   bool
	loads     []float64
	cur       []int
	moves     int
	rem       []float64 // rem[k]: total rate of items[k:]
	lastStart []int     // lastStart[j]: last item index starting on j, -1 if none
	order     [][]int   // per-depth child order buffers
}

func newPlanSearch(p *planProblem, best *planSolution, maxNodes int) *planSearch {
	m := len(p.items)
	b := &planSearch{
		p: p, best: best, maxNodes: maxNodes,
		loads: slices.Clone(p.base), cur: make([]int, m),
		rem: make([]float64, m+1), lastStart: make([]int, p.n), order: make([][]int, m),
	}
	for k := m - 1; k >= 0; k-- {
		b.rem[k] = b.rem[k+1] + p.items[k].rate
	}
	for j := range b.lastStart {
		b.lastStart[j] = -1
	}
	for k, it := range p.items {
		if it.start >= 0 {
			b.lastStart[it.start] = k
		}
		b.order[k] = make([]int, 0, p.n)
	}
	return b
}

func (b *planSearch) dfs(k int) {
	p := b.p
	if b.nodes++; b.nodes > b.maxNodes {
		b.aborted = true
		return
	}
	if k == len(p.items) {
		s := planSolution{assign: b.cur, moves: b.moves}
		s.spread, s.sq = p.figures(b.loads)
		p.score(&s)
		if p.better(&s, b.best) {
			s.assign = slices.Clone(b.cur)
			*b.best = s
		}
		return
	}
	if b.prune(k) {
		return
	}
	it := p.items[k]
	order := b.order[k][:0]
	for j := range p.n {
		if j != it.start {
			order = append(order, j)
		}
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Compare(b.loads[x]*p.inv[x], b.loads[y]*p.inv[y])
	})
	if it.start >= 0 {
		order = slices.Insert(order, 0, it.start)
	}
	b.order[k] = order
	for ci, j := range order {
		if b.symmetric(k, order[:ci], j) {
			continue
		}
		moved := it.start >= 0 && j != it.start
		b.loads[j] += it.rate
		b.cur[k] = j
		if moved {
			b.moves++
		}
		b.dfs(k + 1)
		b.loads[j] -= it.rate
		if moved {
			b.moves--
		}
		if b.aborted {
			return
		}
	}
}

// prune reports whether no completion of the partial assignment of
// items[:k] can rank before the best solution.
func (b *planSearch) prune(k int) bool {
	p := b.p
	// Loads only grow as items are placed: a replica over the mean ends at
	// least that far over it, and one that stays under it even with every
	// remaining item ends at least that far under it.
	over, under, sqLB := 0.0, 0.0, 0.0
	for i := range p.n {
		if d := b.loads[i]*p.inv[i] - p.mean; d > 0 {
			over = max(over, d)
			sqLB += p.w[i] * d * d
		} else if u := p.mean - (b.loads[i]+b.rem[k])*p.inv[i]; u > 0 {
			under = max(under, u)
			sqLB += p.w[i] * u * u
		}
	}
	m2 := p.mean * p.mean
	spreadLB := max(over, under) / p.mean
	lb := p.cost(spreadLB, math.Sqrt(sqLB/m2/p.sw), b.moves)
	switch {
	case lb > b.best.cost+planEps:
		return true
	case lb >= b.best.cost-planEps:
		if p.byCV {
			return spreadLB >= b.best.spread-planEps
		}
		return sqLB/m2 >= b.best.sq-planEps
	}
	return false
}

// symmetric reports whether putting item k on replica j is equivalent to
// putting it on one of the replicas already tried: same weight, same load,
// and neither the start of this or any later item.
func (b *planSearch) symmetric(k int, tried []int, j int) bool {
	p := b.p
	if p.items[k].start == j || b.lastStart[j] >= k {
		return false
	}
	for _, t := range tried {
		if t != p.items[k].start && b.lastStart[t] < k && p.w[t] == p.w[j] && b.loads[t] == b.loads[j] {
			return true
		}
	}
	return false
}
