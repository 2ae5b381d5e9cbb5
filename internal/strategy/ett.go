package strategy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
)

// ETTName is the registered name of the estimated-task-time strategy.
const ETTName = "ett"

// ETTConfig is ett's configuration. Capacities and costs are in units the
// group chooses; only the two ratios cc/P and d/W matter, so any units
// work as long as each pair agrees (CPU-seconds of a reference core and
// cores, bytes and bytes/s by default).
type ETTConfig struct {
	// CPUCapacity is P_s, the processing capacity, of a replica of weight
	// 1 that Capacities does not list; a replica of weight w gets w times
	// it. Default 1 (cc in seconds of a reference core), range (0,1e18].
	CPUCapacity float64 `json:"cpu_capacity"`
	// BWCapacity is W_s, the bandwidth, of a replica of weight 1 that
	// Capacities does not list; weight w gets w times it. Default 1.25e8
	// (bytes/s of 1 Gbit/s), range (0,1e18].
	BWCapacity float64 `json:"bw_capacity"`
	// Capacities sets P_s and W_s per replica, keyed by replica id or by
	// registered address (ids are random, addresses are known in
	// advance; an address matches with or without a trailing slash). A 0
	// or missing part takes the default above. Default none.
	Capacities map[string]ETTCapacity `json:"capacities"`
	// CPUCost is cc(n) of a call that neither the Fulcrum-Cost header nor
	// Paths prices. Default 0.001 (a millisecond of a reference core),
	// range [0,1e18].
	CPUCost float64 `json:"cpu_cost"`
	// DataCost is d(n) of a call that neither the header nor Paths
	// prices. Default 0, range [0,1e18].
	DataCost float64 `json:"data_cost"`
	// Paths prices calls by request path: the longest key that is the
	// path or a prefix of it ending at a "/" boundary wins ("/count"
	// prices "/count" and "/count/7"). A 0 part takes the defaults above.
	// The Fulcrum-Cost header, when present, wins over both. Default none.
	Paths map[string]ETTCost `json:"paths"`
	// Inflight is q in the queue term (1 + q·inflight_s), inflight_s
	// the calls in flight at the replica now (the balancer's own, or the
	// reported inflight metric, the larger). With q > 0 the reported
	// calls' share of the CPU is taken out of cpu_s (see ett): the queue
	// term counts them now, the report counted them up to a report
	// interval ago. 0 gives the paper's formula exactly. Default 1, range
	// [0,100].
	Inflight float64 `json:"inflight"`
	// MaxLoad caps the reported cpu and bw loads, so that a saturated
	// replica's estimate stays finite (1/(1−MaxLoad) times its idle one).
	// Default 0.99, range [0,0.999].
	MaxLoad float64 `json:"max_load"`
	// Tolerance: estimates within this factor of the least count as
	// equal, and the pick rotates among them, so that a few thousandths
	// of reported load do not send every call to the same replica.
	// Default 1.05, range [1,10].
	Tolerance float64 `json:"tolerance"`
}

// ETTCapacity is one replica's P_s (CPU) and W_s (BW).
type ETTCapacity struct {
	CPU float64 `json:"cpu"`
	BW  float64 `json:"bw"`
}

// ETTCost is a call's cc(n) (CPU) and d(n) (Data).
type ETTCost struct {
	CPU  float64 `json:"cpu"`
	Data float64 `json:"data"`
}

func defaultETTConfig() ETTConfig {
	return ETTConfig{
		CPUCapacity: 1,
		BWCapacity:  1.25e8,
		Capacities:  map[string]ETTCapacity{},
		CPUCost:     0.001,
		Paths:       map[string]ETTCost{},
		Inflight:    1,
		MaxLoad:     0.99,
		Tolerance:   1.05,
	}
}

// ettMaxValue bounds capacities and costs.
const ettMaxValue = 1e18

// ett sends a call to the replica of least estimated task time (the .NET Remoting paper
// §IV.A, eq. 1, Lin et al.'s .NET Remoting switch):
//
//	ETT(n, s) = cc(n) / (P_s·(1 − cpu_s)) + d(n) / (W_s·(1 − bw_s))
//
// with cc(n) and d(n) the call's computing cost and data size, P_s and W_s
// the replica's configured CPU and bandwidth capacity, cpu_s and bw_s its
// reported cpu and bw metrics (0–1, capped at MaxLoad). A replica without a
// fresh report, or whose report lacks a metric, counts as carrying the
// mean of the reported ones (0 when none reported): unknown, not idle.
// With Inflight 0 that is all: the paper's formula.
//
// Eq. 1 alone sends every call between two reports to the same replica:
// its loads come "from feedbacks of the back-end computing servers,
// periodically" (§IV.A). fulcrum therefore counts the calls in flight,
// which it knows now, and uses the report only for what they do not
// explain. With Inflight q > 0 the estimate is
//
//	(cc(n)/(P_s·(1 − b_s)) + d(n)/(W_s·(1 − bw_s)))·(1 + q·inflight_s)
//	b_s = cpu_s − min(1, L_s)
//
// Why: 1/(1 − cpu) is the M/M/1 processor-sharing stretch E[T]/S = 1 + E[N]
// (mean calls in progress E[N] = ρ/(1 − ρ)), i.e. eq. 1 already prices the
// replica's queue, averaged over the last report interval; the paper's own
// server model (§IV.B) is processor sharing, "n times the original
// execution time … when there are n tasks executed on a server". A call
// that arrives now shares the replica with inflight_s calls, so
// 1 + inflight_s is the current value of the same factor, and multiplying
// the two (what fulcrum did before) counted the calls twice, the stale
// count dominating: a replica that was busy in the last interval reported
// cpu 0.9 (×10) and was avoided for the whole next one while its queue
// drained, and the others' queues grew in its place; in the model of
// TestETTSharesLikeJoinShortestQueue that made ett slower than random.
// What the report adds is the CPU
// taken by work other than calls (another process in the replica's
// cgroup, a CPU hog): b_s. Where the report measures it (cpu_other,
// which fulcrum's monitor library reports as its cgroup's or host's CPU
// time less its own process's), b_s is that, clamped to [0, MaxLoad].
// Otherwise (an agent reading a whole cgroup's cpu, a monitor that
// cannot see its cgroup) b_s is inferred: the reported cpu less the most
// the reported calls can account for, clamped to [0, MaxLoad]. With L_s = rps·latency
// the mean calls in progress over the report window (Little's law), the
// calls kept the replica busy at most min(1, L_s) of the window (it is
// busy only while a call is in progress, and the share of time with one
// is at most their mean number), so b_s is a lower bound of the other
// work: it is 0 whenever the calls alone can explain the cpu. The M/M/1
// share L/(1+L), which fulcrum subtracted before 2026-11-25, is right on
// average but not window by window: in a 250 ms window at high load whose
// queue happened to stay short (L = 1, cpu 0.9) it left 0.4 of "other
// work", and the replica with the shortest queue was the one avoided. A
// replica whose report lacks rps or latency keeps b_s = cpu_s. Replicas
// running only calls thus compare by 1 + inflight (join the shortest
// queue, weighted by P_s); a replica whose cpu exceeds what its calls can
// explain is slowed by the excess.
//
// The inference errs on replicas with a small CPU quota: a call shorter
// than what is left of the quota's period runs at full core speed, so it
// is in progress for less time than the quota it uses, and cpu exceeds
// min(1, L) with nothing else running (0.1–0.45 on 0.125-core replicas,
// docs/results/2026-11-26-remoting-queue/ett-8-replicas). A measured
// cpu_other has no such error, hence its precedence.
//
// inflight_s is Replica.Inflight: the balancer's own calls in flight now
// plus the reported ones beyond them when the report arrived (calls
// reaching the replica without this balancer). The bandwidth load is the reported one
// (calls rarely saturate a link the way they do a CPU).
//
// The call's cost comes from the Fulcrum-Cost header (Request.Cost and
// Request.Size, set by the front door), else from Paths by the request
// path, else from CPUCost and DataCost. Estimates within Tolerance of the
// least count as ties, and ties go to the first in an order that rotates
// with every pick. Without the tolerance a replica whose report shows a
// few thousandths less load than the others' takes every call that finds
// several replicas idle; on a replica with a small CPU quota the calls
// then queue for its next quota period while the others stand idle
// (docs/results/2026-11-26-ett-cpu-other). The picker precomputes 1/(P_s·(1−cpu_s))
// and 1/(W_s·(1−bw_s)) per replica; Pick is a scan without locks or
// allocations.
type ett struct {
	cfg ETTConfig
	// capacities are Capacities with the keys' trailing slashes dropped.
	capacities map[string]ETTCapacity
	// paths are the priced path prefixes, longest first.
	paths []ettPath
}

type ettPath struct {
	prefix string
	cost   ETTCost
}

func init() {
	Register(Definition{
		Name:     ETTName,
		Summary:  "least estimated task time cc/(P·(1−cpu)) + d/(W·(1−bw)) from reported cpu and bw and a per-call cost (Chen et al., .NET Remoting)",
		Build:    buildETT,
		Defaults: func() map[string]any { return ToParams(defaultETTConfig()) },
	})
}

func buildETT(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultETTConfig()
	if err := DecodeParams(ETTName, params, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &ett{cfg: cfg, capacities: make(map[string]ETTCapacity, len(cfg.Capacities))}
	for k, c := range cfg.Capacities {
		s.capacities[strings.TrimSuffix(k, "/")] = c
	}
	for p, c := range cfg.Paths {
		s.paths = append(s.paths, ettPath{prefix: strings.TrimSuffix(p, "/"), cost: c})
	}
	slices.SortFunc(s.paths, func(a, b ettPath) int { return len(b.prefix) - len(a.prefix) })
	return s, nil
}

func (c *ETTConfig) validate() error {
	const s = ETTName
	positive := func(field string, v float64) error {
		if v > 0 && v <= ettMaxValue {
			return nil
		}
		return &ParamError{Strategy: s, Field: field, Value: v, Allowed: fmt.Sprintf("must be in (0,%g]", ettMaxValue)}
	}
	if err := positive("cpu_capacity", c.CPUCapacity); err != nil {
		return err
	}
	if err := positive("bw_capacity", c.BWCapacity); err != nil {
		return err
	}
	for k, cp := range c.Capacities {
		if strings.TrimSuffix(k, "/") == "" {
			return &ParamError{Strategy: s, Field: "capacities", Value: k, Allowed: "keys must be replica ids or addresses"}
		}
		if err := floatParamIn(s, "capacities."+k+".cpu", cp.CPU, 0, ettMaxValue); err != nil {
			return err
		}
		if err := floatParamIn(s, "capacities."+k+".bw", cp.BW, 0, ettMaxValue); err != nil {
			return err
		}
	}
	if err := floatParamIn(s, "cpu_cost", c.CPUCost, 0, ettMaxValue); err != nil {
		return err
	}
	if err := floatParamIn(s, "data_cost", c.DataCost, 0, ettMaxValue); err != nil {
		return err
	}
	for p, cost := range c.Paths {
		if !strings.HasPrefix(p, "/") {
			return &ParamError{Strategy: s, Field: "paths", Value: p, Allowed: `keys must be paths starting with "/"`}
		}
		if err := floatParamIn(s, "paths."+p+".cpu", cost.CPU, 0, ettMaxValue); err != nil {
			return err
		}
		if err := floatParamIn(s, "paths."+p+".data", cost.Data, 0, ettMaxValue); err != nil {
			return err
		}
	}
	if err := floatParamIn(s, "inflight", c.Inflight, 0, 100); err != nil {
		return err
	}
	if err := floatParamIn(s, "max_load", c.MaxLoad, 0, 0.999); err != nil {
		return err
	}
	return floatParamIn(s, "tolerance", c.Tolerance, 1, 10)
}

func (*ett) Name() string { return ETTName }

// capacityOf is P_s and W_s of r.
func (s *ett) capacityOf(r *Replica) (cpu, bw float64) {
	c, ok := s.capacities[r.ID]
	if !ok {
		c = s.capacities[strings.TrimSuffix(r.Address, "/")]
	}
	w := weightOf(r)
	cpu, bw = c.CPU, c.BW
	if cpu <= 0 {
		cpu = s.cfg.CPUCapacity * w
	}
	if bw <= 0 {
		bw = s.cfg.BWCapacity * w
	}
	return cpu, bw
}

func (s *ett) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	// cpu is each replica's load in the CPU term: the reported cpu, or
	// with the queue term its background part b_s (NaN: not reported).
	cpu := make([]float64, len(replicas))
	for i, r := range replicas {
		cpu[i] = math.NaN()
		if r.Reported {
			cpu[i] = s.cpuLoad(&r.Metrics)
		}
	}
	cpuMean := meanOf(cpu)
	bwMean := reportedMean(replicas, func(m *Metrics) float64 { return m.BW })
	p := &ettPicker{
		s:        s,
		replicas: snapshotOf(replicas),
		cpuTerm:  make([]float64, len(replicas)),
		bwTerm:   make([]float64, len(replicas)),
	}
	for i, r := range p.replicas {
		cpuCap, bwCap := s.capacityOf(r)
		c, bw := cpuMean, bwMean
		if v := cpu[i]; !math.IsNaN(v) {
			c = v
		}
		if r.Reported {
			if v := r.Metrics.BW; !math.IsNaN(v) {
				bw = v
			}
		}
		p.cpuTerm[i] = 1 / (cpuCap * (1 - clampLoad(c, s.cfg.MaxLoad)))
		p.bwTerm[i] = 1 / (bwCap * (1 - clampLoad(bw, s.cfg.MaxLoad)))
	}
	return p
}

// cpuLoad is the load of a report that enters the CPU term: cpu_s for the
// paper's formula (Inflight 0); else the reported cpu_other; else, when
// the report has rps and latency, b_s = cpu_s − min(1, L) with L =
// rps·latency, otherwise cpu_s (see ett). NaN when none is reported.
func (s *ett) cpuLoad(m *Metrics) float64 {
	cpu := m.CPU
	if s.cfg.Inflight > 0 && !math.IsNaN(m.CPUOther) {
		return m.CPUOther
	}
	if math.IsNaN(cpu) || s.cfg.Inflight == 0 || math.IsNaN(m.RPS) || math.IsNaN(m.LatencyMS) {
		return cpu
	}
	l := max(m.RPS, 0) * max(m.LatencyMS, 0) / 1000
	if math.IsInf(l, 0) || math.IsNaN(l) {
		return cpu
	}
	return max(cpu-min(l, 1), 0)
}

// meanOf is the mean of the values that are not NaN (0 when none is).
func meanOf(v []float64) float64 {
	var sum float64
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// reportedMean is the mean of a metric over the replicas that report it
// (0 when none does).
func reportedMean(replicas []*Replica, metric func(*Metrics) float64) float64 {
	var sum float64
	n := 0
	for _, r := range replicas {
		if v := metric(&r.Metrics); r.Reported && !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// clampLoad puts a reported load in [0, limit].
func clampLoad(v, limit float64) float64 { return min(max(v, 0), limit) }

// cost is the call's cc(n) and d(n).
func (s *ett) cost(r *Request) (cpu, data float64) {
	cpu, data = r.Cost, r.Size
	if cpu > 0 && data > 0 {
		return cpu, data
	}
	var byPath ETTCost
	for _, p := range s.paths {
		if pathUnder(r.Path, p.prefix) {
			byPath = p.cost
			break
		}
	}
	if cpu <= 0 {
		cpu = byPath.CPU
		if cpu <= 0 {
			cpu = s.cfg.CPUCost
		}
	}
	if data <= 0 {
		data = byPath.Data
		if data <= 0 {
			data = s.cfg.DataCost
		}
	}
	return cpu, data
}

// pathUnder reports whether path is prefix or lies below it ("" is the
// prefix of "/" and everything).
func pathUnder(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '/' || prefix == ""
}

type ettPicker struct {
	s        *ett
	replicas []*Replica
	// cpuTerm and bwTerm are 1/(P_s·(1−cpu_s)) and 1/(W_s·(1−bw_s)).
	cpuTerm, bwTerm []float64
	// next rotates where the scan starts, for fair tie-breaking.
	next atomic.Uint64
}

// inflight is the calls in flight at replica i now (Replica.Inflight).
func (p *ettPicker) inflight(i int) float64 { return p.replicas[i].Inflight() }

func (p *ettPicker) Pick(r *Request) (*Replica, error) {
	cpu, data := p.s.cost(r)
	q := p.s.cfg.Inflight
	n := len(p.replicas)
	start := int((p.next.Add(1) - 1) % uint64(n))
	estimate := func(i int) float64 {
		e := cpu*p.cpuTerm[i] + data*p.bwTerm[i]
		if q > 0 {
			e *= 1 + q*p.inflight(i)
		}
		return e
	}
	least := math.Inf(1)
	for i := range n {
		least = min(least, estimate(i))
	}
	// The first in rotated order within the tolerance of the least. The
	// calls in flight may have moved since the first scan: failing all,
	// the first replica of least estimate now.
	limit := least * p.s.cfg.Tolerance
	best, bestETT := start, math.Inf(1)
	for k := range n {
		i := (start + k) % n
		e := estimate(i)
		if e <= limit {
			return p.replicas[i], nil
		}
		if e < bestETT {
			best, bestETT = i, e
		}
	}
	return p.replicas[best], nil
}

// ettEstimate is the estimate (with the queue term when Inflight > 0) of a call r on replica i of
// a picker built by ett (tests); NaN for another picker.
func ettEstimate(p Picker, r *Request, i int) float64 {
	ep, ok := p.(*ettPicker)
	if !ok || i < 0 || i >= len(ep.replicas) {
		return math.NaN()
	}
	cpu, data := ep.s.cost(r)
	e := cpu*ep.cpuTerm[i] + data*ep.bwTerm[i]
	if q := ep.s.cfg.Inflight; q > 0 {
		e *= 1 + q*ep.inflight(i)
	}
	return e
}
