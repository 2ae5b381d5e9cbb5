package queuemodel

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		p    Policy
		want string
	}{
		{"no servers", Config{Servers: 0, Utilization: 0.5}, Random, "servers 0, must be in [1, 1024]"},
		{"too many servers", Config{Servers: 1025, Utilization: 0.5}, Random, "servers 1025"},
		{"idle", Config{Servers: 2, Utilization: 0}, Random, "utilization 0, must be in (0, 1)"},
		{"saturated", Config{Servers: 2, Utilization: 1}, Random, "utilization 1,"},
		{"NaN load", Config{Servers: 2, Utilization: math.NaN()}, Random, "utilization NaN"},
		{"negative calls", Config{Servers: 2, Utilization: 0.5, Calls: -1}, Random, "calls -1, must be in [0, 1e8]"},
		{"unknown policy", Config{Servers: 2, Utilization: 0.5, Calls: 10}, Policy(7), "unknown policy 7"},
		{"quota without a period", Config{Servers: 2, Utilization: 0.5, Quota: Quota{Cores: 0.5}}, Random, "quota period 0, must be in (0, 1e6]"},
		{"quota above a core", Config{Servers: 2, Utilization: 0.5, Quota: Quota{Cores: 2, Period: 1}}, Random, "quota cores 2, must be in (0, 1]"},
		{"machine below the quotas", Config{Servers: 4, Utilization: 0.5, Quota: Quota{Cores: 0.5, Period: 1, Machine: 1.5}}, Random, "quota machine 1.5 cores, must be 0 (a core per server) or in [servers × cores = 2, 1024]"},
		{"NaN machine", Config{Servers: 2, Utilization: 0.5, Quota: Quota{Cores: 0.5, Period: 1, Machine: math.NaN()}}, Random, "quota machine NaN cores"},
		{"negative parallel", Config{Servers: 2, Utilization: 0.5, Parallel: -1}, Random, "parallel -1, must be in [0, 1024] (0: no limit)"},
		{"parallel with least delay", Config{Servers: 2, Utilization: 0.5, Parallel: 1}, LeastDelay, "parallel 1 with least-delay"},
		{"negative handoff", Config{Servers: 2, Utilization: 0.5, Handoff: -0.1}, Random, "handoff -0.1, must be in [0, 1e3]"},
		{"NaN lead", Config{Servers: 2, Utilization: 0.5, Lead: math.NaN()}, HeldFIFO, "lead NaN, must be in [0, 1e3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Reduction(tc.cfg, tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Reduction(%+v, %v) = %v, want an error with %q", tc.cfg, tc.p, err, tc.want)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	cfg := Config{Servers: 3, Utilization: 0.8, Calls: 20_000, Seed: 5, Slots: 2}
	for _, p := range []Policy{Random, ShortestQueue, LeastDelay, HeldFIFO, HeldLeastCost} {
		a, err := MeanResponse(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := MeanResponse(cfg, p)
		if a != b {
			t.Errorf("%v: %v then %v from one config", p, a, b)
		}
	}
	other := cfg
	other.Seed = 6
	a, _ := MeanResponse(cfg, ShortestQueue)
	b, _ := MeanResponse(other, ShortestQueue)
	if a == b {
		t.Errorf("seeds 5 and 6 gave the same mean %v", a)
	}
}

// TestProcessorSharingMean checks the simulation against the one exact
// result it can meet: a processor-sharing server fed by Poisson arrivals
// of exponential calls has E[T]/E[S] = 1/(1 − ρ), alone or as one of n
// servers each given a random 1/n of the calls. At ρ 0.5, 200,000 calls
// put the mean within about 1% (a few standard errors).
func TestProcessorSharingMean(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		for _, p := range []Policy{Random, ShortestQueue, LeastDelay} {
			if n == 3 && p != Random {
				continue
			}
			got, err := MeanResponse(Config{Servers: n, Utilization: 0.5, Calls: 200_000, Seed: 1}, p)
			if err != nil {
				t.Fatal(err)
			}
			if want := 2.0; math.Abs(got/want-1) > 0.03 {
				t.Errorf("%d servers, %v, ρ 0.5: E[T]/E[S] = %.4f, want %.1f ± 3%%", n, p, got, want)
			}
		}
	}
}

// TestPoliciesOrder: knowing more helps. At ρ 0.9, joining the shortest
// queue cuts random's mean by over 40% with 2 servers and over 60% with
// 4, and knowing every call's remaining work cuts it further.
// The same workload (seed) goes to each, so the order is not noise.
func TestPoliciesOrder(t *testing.T) {
	t.Parallel()
	for n, floor := range map[int]float64{2: 0.4, 4: 0.6} {
		cfg := Config{Servers: n, Utilization: 0.9, Calls: 100_000, Seed: 2}
		jsq, err := Reduction(cfg, ShortestQueue)
		if err != nil {
			t.Fatal(err)
		}
		best, err := Reduction(cfg, LeastDelay)
		if err != nil {
			t.Fatal(err)
		}
		if jsq < floor || best <= jsq {
			t.Errorf("%d servers at 0.9: shortest-queue %.3f (want ≥ %.1f), least-delay %.3f (want above it)", n, jsq, floor, best)
		}
	}
}

// TestChoose places calls by hand: server 0 has one call with 3 units
// left, server 1 two with 0.5 each. A call of size 2 joins the shortest
// queue at server 0 but adds least delay at server 1 (1 < 2); a call of
// size 0.25 adds 0.25 at 0 and 0.5 at 1, so least-delay picks 0 too.
func TestChoose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Policy
		x    float64
		want int
	}{
		{ShortestQueue, 2, 0},
		{LeastDelay, 2, 1},
		{LeastDelay, 0.25, 0},
	} {
		s := newSim(Config{Servers: 2, Utilization: 0.5, Calls: 1}, tc.p)
		s.servers[0].v = 10
		heap.Push(&s.servers[0].calls, call{tag: 13})
		heap.Push(&s.servers[1].calls, call{tag: 0.5})
		heap.Push(&s.servers[1].calls, call{tag: 0.5})
		for range 8 { // every start of the scan
			if got := s.choose(tc.x); got != tc.want {
				t.Fatalf("%v, call of %v: server %d, want %d", tc.p, tc.x, got, tc.want)
			}
		}
	}
}

// TestRounds: a sample split into rounds starts each from idle servers
// and measures every call, so at high load its mean is below the steady
// state's (the first calls of a round find short queues); its calls are
// all counted, so one round of one call is that call's own size.
func TestRounds(t *testing.T) {
	t.Parallel()
	steady, err := MeanResponse(Config{Servers: 2, Utilization: 0.9, Calls: 50_000, Seed: 3}, Random)
	if err != nil {
		t.Fatal(err)
	}
	rounds, err := MeanResponse(Config{Servers: 2, Utilization: 0.9, Calls: 50_000, Rounds: 500, Seed: 3}, Random)
	if err != nil {
		t.Fatal(err)
	}
	if !(rounds < 0.8*steady) {
		t.Errorf("500 rounds of 100 calls: mean %.3f, want well below the steady state's %.3f", rounds, steady)
	}
	one, _ := MeanResponse(Config{Servers: 1, Utilization: 0.5, Calls: 1, Rounds: 1, Seed: 4}, Random)
	work := rand.New(rand.NewPCG(4, 0x9e3779b97f4a7c15))
	work.ExpFloat64() // the gap before it
	size := work.ExpFloat64()
	if math.Abs(one-size) > 1e-12 {
		t.Errorf("one call alone took %v, want its size %v", one, size)
	}
	if _, err := MeanResponse(Config{Servers: 1, Utilization: 0.5, Calls: 10, Rounds: 11}, Random); err == nil || !strings.Contains(err.Error(), "rounds 11, must be in [0, calls 10]") {
		t.Errorf("11 rounds of 10 calls: %v", err)
	}
}

// TestReductionSpread: the spread of samples of a bench's size is sorted,
// reproducible, and wide where a long run's figure is tight: 2,000 calls
// at ρ 0.9 put shortest-queue's reduction anywhere in tens of points.
func TestReductionSpread(t *testing.T) {
	t.Parallel()
	cfg := Config{Servers: 2, Utilization: 0.9, Calls: 2000, Rounds: 2}
	got, err := ReductionSpread(cfg, ShortestQueue, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 || !slices.IsSorted(got) {
		t.Fatalf("spread %v: want 40 sorted reductions", got)
	}
	if got[len(got)-1]-got[0] < 0.1 || got[0] < -1 || got[len(got)-1] > 1 {
		t.Errorf("spread %.3f … %.3f: want a range over 10 points within (−1, 1)", got[0], got[len(got)-1])
	}
	again, _ := ReductionSpread(cfg, ShortestQueue, 40)
	if !slices.Equal(got, again) {
		t.Error("the same config gave another spread")
	}
	for _, bad := range []int{0, 10001} {
		if _, err := ReductionSpread(cfg, ShortestQueue, bad); err == nil || !strings.Contains(err.Error(), "must be in [1, 10000]") {
			t.Errorf("%d samples: %v", bad, err)
		}
	}
	if _, err := ReductionSpread(cfg, Policy(9), 3); err == nil || !strings.Contains(err.Error(), "unknown policy 9") {
		t.Errorf("policy 9: %v", err)
	}
}

// erlangCMean is E[T]/E[S] of the M/M/n queue (first come, first served)
// at utilisation rho, from the Erlang C formula.
func erlangCMean(n int, rho float64) float64 {
	a := float64(n) * rho
	term, sum := 1.0, 0.0
	for k := range n {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	last := term * a / (float64(n) - a)
	return 1 + last/(sum+last)/(float64(n)*(1-rho))
}

// TestHeldFIFOIsMMn: holding calls at the dispatcher with one slot per
// server is the M/M/n queue, whose mean is exact.
func TestHeldFIFOIsMMn(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 4} {
		got, err := MeanResponse(Config{Servers: n, Utilization: 0.7, Calls: 300_000, Seed: 3, Slots: 1}, HeldFIFO)
		if err != nil {
			t.Fatal(err)
		}
		if want := erlangCMean(n, 0.7); math.Abs(got/want-1) > 0.03 {
			t.Errorf("%d servers, held-fifo, ρ 0.7: E[T]/E[S] = %.4f, want M/M/%d's %.4f ± 3%%", n, got, n, want)
		}
	}
}

// TestHeldLeastCostLowersTheMean: serving the smallest held call first
// lowers the mean below holding in arrival order, and below joining the
// shortest queue, on the same calls; more slots per server move it back
// towards processor sharing.
func TestHeldLeastCostLowersTheMean(t *testing.T) {
	t.Parallel()
	mean := func(p Policy, slots int) float64 {
		t.Helper()
		m, err := MeanResponse(Config{Servers: 4, Utilization: 0.9, Calls: 200_000, Seed: 9, Slots: slots}, p)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	jsq, fifo, cost1, cost2, cost64 := mean(ShortestQueue, 0), mean(HeldFIFO, 1), mean(HeldLeastCost, 1), mean(HeldLeastCost, 2), mean(HeldLeastCost, 64)
	if !(cost1 < cost2 && cost2 < fifo && fifo < jsq) {
		t.Errorf("E[T]/E[S]: held-least-cost 1 slot %.3f, 2 slots %.3f, held-fifo %.3f, shortest queue %.3f: want them increasing", cost1, cost2, fifo, jsq)
	}
	if math.Abs(cost64/jsq-1) > 0.03 {
		t.Errorf("held-least-cost with 64 slots %.3f, want shortest queue's %.3f ± 3%% (nothing is ever held)", cost64, jsq)
	}
}

func TestSlotsOutOfRange(t *testing.T) {
	t.Parallel()
	_, err := MeanResponse(Config{Servers: 2, Utilization: 0.5, Calls: 10, Slots: 2000}, HeldFIFO)
	if err == nil || !strings.Contains(err.Error(), "slots 2000, must be in [0, 1024]") {
		t.Fatalf("err %v, want the slots range", err)
	}
}

// A quota of a whole core never throttles: the server runs at speed 1
// all the time, as the constant-speed one does, and only the extra events
// at period ends (rounding) can tell them apart.
func TestQuotaOfAWholeCoreIsProcessorSharing(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{Random, ShortestQueue, HeldLeastCost} {
		cfg := Config{Servers: 3, Utilization: 0.8, Calls: 20_000, Seed: 3, Slots: 2}
		ps, err := MeanResponse(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Quota = Quota{Cores: 1, Period: 0.3}
		q, err := MeanResponse(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(q/ps-1) > 1e-9 {
			t.Errorf("%v: a whole-core quota gives %v, processor sharing %v", p, q, ps)
		}
	}
}

// The shorter the period, the closer a quota server comes to a constant
// speed one: with a period of a hundredth of a mean call, random's mean
// at ρ 0.5 is processor sharing's exact 1/(1 − ρ) within a few percent.
// A long period makes lone calls fast (a call shorter than its budget
// runs at the core's full speed): at low load the mean drops well below
// the constant-speed 1/(1 − ρ).
func TestQuotaPeriod(t *testing.T) {
	t.Parallel()
	cfg := Config{Servers: 2, Utilization: 0.5, Calls: 200_000, Seed: 1, Quota: Quota{Cores: 0.25, Period: 0.01}}
	got, err := MeanResponse(cfg, Random)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got/2-1) > 0.04 {
		t.Errorf("period 0.01: random's E[T]/E[S] = %.4f, want 2 ± 4%%", got)
	}
	cfg.Utilization, cfg.Quota.Period = 0.05, 4
	got, err = MeanResponse(cfg, Random)
	if err != nil {
		t.Fatal(err)
	}
	if ps := 1 / (1 - cfg.Utilization); got > 0.6*ps {
		t.Errorf("period 4 at ρ 0.05: random's E[T]/E[S] = %.4f, want well below processor sharing's %.4f", got, ps)
	}
}

// Servers sharing a machine run at a whole core's speed while no more of
// them work than it has cores, and split its cores evenly beyond that; a
// server without budget takes none of them.
func TestQuotaMachineSharesItsCores(t *testing.T) {
	t.Parallel()
	s := newSim(Config{Servers: 4, Utilization: 0.5, Quota: Quota{Cores: 0.25, Period: 1, Machine: 2}}, Random)
	for i := range 2 {
		s.start(&s.servers[i], 1, 0)
	}
	s.setShare()
	if v := s.speed(&s.servers[0]); v != 4 {
		t.Errorf("2 of 4 servers at work on 2 cores: speed %v, want a whole core's 4", v)
	}
	s.start(&s.servers[2], 1, 0)
	s.start(&s.servers[3], 1, 0)
	s.setShare()
	if v := s.speed(&s.servers[0]); v != 2 {
		t.Errorf("4 servers at work on 2 cores: speed %v, want half a core's 2", v)
	}
	s.servers[3].budget = 0
	s.setShare()
	if v, idle := s.speed(&s.servers[0]), s.speed(&s.servers[3]); v != 4*2.0/3 || idle != 0 {
		t.Errorf("3 servers with budget on 2 cores: speeds %v and %v for the spent one, want %v and 0", v, idle, 4*2.0/3)
	}
	// Spending follows the speed: a third of a period at 8/3 leaves none
	// of a budget of 1 minus 8/9.
	budget := s.servers[0].budget
	s.advance(1.0 / 3)
	if got, want := s.servers[0].budget, budget-8.0/9; math.Abs(got-want) > 1e-12 {
		t.Errorf("budget after a third of a period at 8/3: %v, want %v", got, want)
	}
}

// A machine with a core for every server is the default; one with fewer
// slows the calls that find others at work.
func TestQuotaMachine(t *testing.T) {
	t.Parallel()
	cfg := Config{Servers: 4, Utilization: 0.9, Calls: 20_000, Seed: 5, Parallel: 1, Slots: 1, Quota: Quota{Cores: 0.25, Period: 0.75}}
	own, err := MeanResponse(cfg, HeldLeastCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Quota.Machine = 4
	if got, err := MeanResponse(cfg, HeldLeastCost); err != nil || got != own {
		t.Errorf("machine of 4 cores for 4 servers: %v (%v), want the default's %v", got, err, own)
	}
	cfg.Quota.Machine = 1
	shared, err := MeanResponse(cfg, HeldLeastCost)
	if err != nil {
		t.Fatal(err)
	}
	if shared <= own*1.02 {
		t.Errorf("4 servers of a quarter core sharing 1 core: %.3f, want above a core each's %.3f by more than 2%%", shared, own)
	}
}

// A server with Parallel 1 works on one call at a time and starts the
// next it was sent when that one finishes, first come first served.
func TestParallelQueuesAtTheServer(t *testing.T) {
	t.Parallel()
	s := newSim(Config{Servers: 1, Utilization: 0.5, Parallel: 1}, Random)
	sv := &s.servers[0]
	s.start(sv, 3, 0)
	s.start(sv, 1, 0.5)
	s.start(sv, 2, 0.6)
	if len(sv.calls) != 1 || len(sv.waiting) != 2 || sv.load() != 3 {
		t.Fatalf("after three calls: %d in progress, %d waiting, load %d; want 1, 2, 3", len(sv.calls), len(sv.waiting), sv.load())
	}
	if sv.calls[0].tag != 3 || sv.waiting[0].size != 1 || sv.waiting[1].size != 2 {
		t.Fatalf("in progress %+v, waiting %+v: want the size-3 call working and the others in arrival order", sv.calls, sv.waiting)
	}
	// With no limit the three share the server.
	ps := newSim(Config{Servers: 1, Utilization: 0.5}, Random)
	for _, x := range []float64{3, 1, 2} {
		ps.start(&ps.servers[0], x, 0)
	}
	if n := len(ps.servers[0].calls); n != 3 {
		t.Fatalf("processor sharing: %d calls in progress, want 3", n)
	}
}

// With exponential sizes the mean response time does not depend on the
// order a server serves its calls in, so first come first served gives
// random's M/M/1 mean as processor sharing does; a held policy's figures
// move by sampling noise only, the calls it holds being few.
func TestParallelOneKeepsTheMeans(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{Random, HeldLeastCost} {
		cfg := Config{Servers: 4, Utilization: 0.9, Calls: 300_000, Seed: 4, Slots: 2}
		ps, err := MeanResponse(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Parallel = 1
		fcfs, err := MeanResponse(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(fcfs/ps-1) > 0.05 {
			t.Errorf("%v: first come first served %.3f, processor sharing %.3f: want within 5%%", p, fcfs, ps)
		}
	}
}

// A hand-off delays every call by the same time: random sends the same
// calls to the same servers, each starting Handoff later, so its mean is
// Handoff more.
func TestHandoffDelaysRandom(t *testing.T) {
	t.Parallel()
	cfg := Config{Servers: 3, Utilization: 0.8, Calls: 50_000, Seed: 2}
	base, err := MeanResponse(cfg, Random)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Handoff = 0.07
	late, err := MeanResponse(cfg, Random)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(late-base-0.07) > 1e-6 {
		t.Errorf("random with a hand-off of 0.07: %.6f, without %.6f: want 0.07 more", late, base)
	}
}

// With one slot a held call reaches its server a hand-off after the slot
// freed, and the server idles meanwhile: at ρ 0.9 a tenth of a mean call
// per hand-off takes nearly all the spare capacity, and the mean soars.
// Freeing the slot a hand-off ahead of the call's end (Lead) sends the
// next call in time, and the mean comes back to within a few percent of
// the instant hand-off's plus the hand-off itself.
func TestLeadHidesTheHandoff(t *testing.T) {
	t.Parallel()
	mean := func(handoff, lead float64) float64 {
		t.Helper()
		m, err := MeanResponse(Config{Servers: 4, Utilization: 0.9, Calls: 300_000, Seed: 6, Slots: 1, Handoff: handoff, Lead: lead}, HeldLeastCost)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	instant, idle, ahead := mean(0, 0), mean(0.1, 0), mean(0.1, 0.1)
	if idle < 2*instant {
		t.Errorf("hand-off 0.1 without lead: E[T]/E[S] %.3f, want at least twice the instant hand-off's %.3f", idle, instant)
	}
	if math.Abs(ahead/(instant+0.1)-1) > 0.03 {
		t.Errorf("hand-off 0.1 with lead 0.1: E[T]/E[S] %.3f, want the instant hand-off's %.3f + 0.1 within 3%%", ahead, instant)
	}
	// Freeing slots early without a hand-off only commits calls early:
	// a small cost.
	if early := mean(0, 0.2); !(early > instant && early < 1.2*instant) {
		t.Errorf("lead 0.2 without hand-off: E[T]/E[S] %.3f, want a little above %.3f", early, instant)
	}
}
