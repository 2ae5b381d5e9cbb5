package analyzer_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The simulation commands: clients with call rates bound to replicas, whose
// monitors report the sum of their bound clients' rates (and list them) and
// obey advisories as the monitor library does, and a front door that sends
// returning clients to their planned replica or picks one.

// world CLIENT=RATE@REPLICA ...: the simulated clients and where they are
// bound; prints each replica's load.
func (s *scenario) cmdWorld(c scripttest.Cmd) string {
	clear(s.clients)
	for _, id := range c.Order {
		rate, replica, ok := strings.Cut(c.Args[id], "@")
		if !ok {
			s.t.Fatalf("line %d: client %s must be RATE@REPLICA", c.Line, id)
		}
		s.clients[id] = &simClient{id: id, rate: s.float(c, rate), replica: replica}
	}
	return s.worldLoads()
}

// worldLoads prints each replica's load from the simulated clients, and
// the spread over the active ones.
func (s *scenario) worldLoads() string {
	var out []string
	var loads, weights []float64
	for _, in := range s.infos {
		l := s.worldLoad(in.ID)
		out = append(out, fmt.Sprintf("%s=%s", in.ID, num(l)))
		if in.State == analyzer.StateActive {
			loads, weights = append(loads, l), append(weights, in.Weight)
		}
	}
	out = append(out, fmt.Sprintf("spread=%s%%", num(100*strategy.Spread(loads, weights))))
	return strings.Join(out, " ")
}

func (s *scenario) worldLoad(id string) float64 {
	l := 0.0
	for _, sc := range s.clients {
		if sc.replica == id {
			l += sc.rate
		}
	}
	return l
}

// boundTo lists the clients bound to replica id, busiest first.
func (s *scenario) boundTo(id string) []*simClient {
	var out []*simClient
	for _, sc := range s.clients {
		if sc.replica == id {
			out = append(out, sc)
		}
	}
	slices.SortFunc(out, func(a, b *simClient) int {
		if c := cmp.Compare(b.rate, a.rate); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// run rounds=N [jitter=J] [seed=S]: N report intervals. In each, the clock
// advances one interval, every replica that is not down reports its
// clients' load (each client's measured rate off by up to ±J of it, drawn
// from a generator seeded with S, as rates measured over one interval
// are), the
// analyzer steps, and the monitors obey new advisories: the clients sent
// back come to the front door, which binds them to their planned replica
// or picks one. Prints, per round, the replicas' true loads when they
// reported, their spread and the clients that moved.
func (s *scenario) cmdRun(c scripttest.Cmd) string {
	rounds := int(s.float(c, s.arg(c, "rounds")))
	jitter := s.float(c, s.argOr(c, "jitter", "0"))
	rng := rand.New(rand.NewPCG(uint64(s.float(c, s.argOr(c, "seed", "1"))), 7))
	var out []string
	for round := 1; round <= rounds; round++ {
		loads, moved := s.simRound(jitter, rng)
		line := fmt.Sprintf("r%d t=%s %s", round, s.elapsed(), loads)
		if len(moved) > 0 {
			line += " moved " + strings.Join(moved, ",")
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// simRound runs one report interval of the simulation and returns the
// replicas' true loads at its reports and the clients that moved after its
// step.
func (s *scenario) simRound(jitter float64, rng *rand.Rand) (loads string, moved []string) {
	s.now = s.now.Add(s.interval)
	for _, in := range s.infos {
		if in.State == analyzer.StateDown {
			continue
		}
		var rep protocol.Report
		for _, sc := range s.boundTo(in.ID) {
			rate := sc.rate * (1 + jitter*(2*rng.Float64()-1))
			rep.Load += rate
			rep.Clients = append(rep.Clients, protocol.ClientRate{ID: sc.id, Rate: rate})
		}
		for i := range s.lingering {
			if l := &s.lingering[i]; l.replica == in.ID && l.rounds > 0 {
				rep.Load += l.rate
				rep.Clients = append(rep.Clients, protocol.ClientRate{ID: l.id, Rate: l.rate})
				l.rounds--
			}
		}
		rep.Metrics = map[string]float64{protocol.MetricRPS: rep.Load}
		if _, err := s.an.Report(in.ID, rep, s.now); err != nil {
			s.t.Fatalf("report: %v", err)
		}
		s.live[in.ID].ResetExtra()
	}
	loads = s.worldLoads()
	s.last = s.an.Step(s.now)
	return loads, s.obey()
}

// obey has every monitor act on an advisory it has not acted on yet (once
// per epoch) and the front door rebind the clients sent back.
func (s *scenario) obey() []string {
	p, eligible := s.picker()
	var moved []string
	for _, in := range s.infos {
		adv := s.an.Advisory(in.ID)
		if adv.Epoch == s.obeyed[in.ID] {
			continue
		}
		s.obeyed[in.ID] = adv.Epoch
		var back []*simClient
		switch adv.Advisory {
		case protocol.Drain:
			back = s.boundTo(in.ID)
		case protocol.High:
			if len(adv.Clients) > 0 {
				for _, id := range adv.Clients {
					if sc := s.clients[id]; sc != nil && sc.replica == in.ID {
						back = append(back, sc)
					}
				}
				break
			}
			left := adv.Shed
			for _, sc := range s.boundTo(in.ID) {
				if left > 0 && sc.rate <= left {
					back = append(back, sc)
					left -= sc.rate
				}
			}
		}
		if s.unidentified {
			for _, sc := range back {
				r, err := p.Pick(&strategy.Request{})
				if err != nil {
					continue
				}
				from := sc.replica
				s.lingering = append(s.lingering, simLinger{id: sc.id, replica: from, rate: sc.rate, rounds: 1})
				delete(s.clients, sc.id)
				sc.id, sc.replica = sc.id+"'", r.ID
				s.clients[sc.id] = sc
				s.an.Bound("", r.ID)
				moved = append(moved, fmt.Sprintf("%s:%s->%s", sc.id, from, r.ID))
			}
			continue
		}
		for _, sc := range back {
			to, ok := s.an.Target(sc.id)
			if !ok || !slices.ContainsFunc(eligible, func(r *strategy.Replica) bool { return r.ID == to }) {
				r, err := p.Pick(&strategy.Request{Client: sc.id})
				if err != nil {
					continue
				}
				to = r.ID
			}
			from := sc.replica
			sc.replica = to
			s.an.Bound(sc.id, to)
			moved = append(moved, fmt.Sprintf("%s:%s->%s", sc.id, from, to))
		}
	}
	return moved
}

// frontdoor ids=BOOL: whether the front door can tell returning clients
// apart (true, the default: HTTP's client id). With ids=false (GIOP), a
// client sent back is bound where the picker says, whatever the plan, and
// comes back as a new client (its new connection: the old id with ' added;
// the analyzer only learns of an unnamed binding), while the replica it
// left still lists the old id at its rate in one more report (the interval
// in which it called both).
func (s *scenario) cmdFrontDoor(c scripttest.Cmd) string {
	ids, err := strconv.ParseBool(s.arg(c, "ids"))
	if err != nil {
		s.t.Fatalf("line %d: ids: %v", c.Line, err)
	}
	s.unidentified = !ids
	s.an.SetUnidentifiedClients(!ids)
	return "ok"
}

// arrive n=N rate=R [prefix=P]: N new clients at rate R come to the front
// door one after another (no report in between) and are bound where the
// picker says; prints how many each replica got.
func (s *scenario) cmdArrive(c scripttest.Cmd) string {
	n := int(s.float(c, s.arg(c, "n")))
	rate := s.float(c, s.arg(c, "rate"))
	prefix := s.argOr(c, "prefix", "n")
	p, _ := s.picker()
	counts := map[string]int{}
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i+1)
		r, err := p.Pick(&strategy.Request{Client: id})
		if err != nil {
			counts["failed"]++
			continue
		}
		s.clients[id] = &simClient{id: id, rate: rate, replica: r.ID}
		s.an.Bound(id, r.ID)
		counts[r.ID]++
	}
	var out []string
	for _, id := range s.ids() {
		out = append(out, fmt.Sprintf("%s=%d", id, counts[id]))
	}
	if counts["failed"] > 0 {
		out = append(out, fmt.Sprintf("failed=%d", counts["failed"]))
	}
	return strings.Join(out, " ")
}
