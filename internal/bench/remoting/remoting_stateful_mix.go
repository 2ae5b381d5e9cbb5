package remoting

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

// The stateful cases (Chen et al. §III and §V: .NET Remoting's three
// kinds of objects, the stateful ones kept on their replica by the
// switch's session table). A stateful run mixes, in each client's calls,
// single-call getPrimeCount(X) (GET /count/{X}, balanced call by call)
// with calls on stateful objects doing the same work: the client's own
// client-activated object (created by POST /objects, whose 201 Location
// the group's client-activated rule learns) and singletons shared by all
// clients (GET /singletons/{name}, kept on one replica by rendezvous
// hashing). The replicas count the calls of each object they hold
// (package backend), so the bench can tell whether every stateful call
// reached its object's replica.

// callKind is what a stateful run's call calls.
type callKind uint8

const (
	kindSingleCall callKind = iota
	kindSingleton
	kindActivated
	numKinds
)

// String is the kind's affinity name (protocol.Affinity*).
func (k callKind) String() string {
	switch k {
	case kindSingleton:
		return "singleton"
	case kindActivated:
		return "client-activated"
	}
	return "single-call"
}

// statefulCall is one call of a stateful run: a getPrimeCount call with
// its kind and, for a singleton, which of the run's names it calls.
type statefulCall struct {
	remotingCall
	kind      callKind
	singleton int
}

// statefulMix gives each call of clients a kind, from a source seeded
// with seed: stateful with probability share, then a singleton (a name
// drawn uniformly among singletons) or the client's client-activated
// object, half and half; single-call otherwise. The X and the gaps stay
// those of clients, so that every strategy answers the same work.
func statefulMix(seed uint64, clients [][]remotingCall, share float64, singletons int) [][]statefulCall {
	rng := rand.New(rand.NewPCG(seed, 0x73746174656675)) // "stateful"
	out := make([][]statefulCall, len(clients))
	for c, calls := range clients {
		out[c] = make([]statefulCall, len(calls))
		for i, call := range calls {
			sc := statefulCall{remotingCall: call}
			if rng.Float64() < share {
				if rng.IntN(2) == 0 && singletons > 0 {
					sc.kind, sc.singleton = kindSingleton, rng.IntN(singletons)
				} else {
					sc.kind = kindActivated
				}
			}
			out[c][i] = sc
		}
	}
	return out
}

// statefulAnswers is what a stateful run's answers said of its objects:
// the replica that created each client-activated object (by id), and the
// calls answered 200 for each object and singleton, by the replica that
// answered.
type statefulAnswers struct {
	creators map[string]string           // object id → creating replica
	objects  map[string]map[string]int64 // object id → replica → calls answered
	single   map[string]map[string]int64 // singleton name → replica → calls answered
}

func newStatefulAnswers() *statefulAnswers {
	return &statefulAnswers{creators: map[string]string{}, objects: map[string]map[string]int64{}, single: map[string]map[string]int64{}}
}

func (a *statefulAnswers) answered(m map[string]map[string]int64, key, replica string) {
	if m[key] == nil {
		m[key] = map[string]int64{}
	}
	m[key][replica]++
}

// misrouted counts the stateful calls answered by a replica other than
// their object's: for a client-activated object, every call its creator
// did not answer; for a singleton, every call not answered by the
// replica that answered most of its calls. (Calls refused as unknown by
// the replica they reached are counted by the run itself.)
func (a *statefulAnswers) misrouted() int64 {
	var n int64
	for id, by := range a.objects {
		for rep, calls := range by {
			if rep != a.creators[id] {
				n += calls
			}
		}
	}
	for _, by := range a.single {
		var total, most int64
		for _, calls := range by {
			total += calls
			most = max(most, calls)
		}
		n += total - most
	}
	return n
}

// countMismatches compares the replicas' own counts (GET /objects of
// each) with the answers: each object of the run must be held by its
// creator alone, with as many calls as were answered for it there; each
// singleton by one replica alone, with every call answered for it. It
// returns how many objects and singletons do not, and the first of them
// described. Objects of other runs (other ids and names) are ignored.
func (a *statefulAnswers) countMismatches(counts []backend.ObjectCounts) (n int, first string) {
	note := func(format string, args ...any) {
		n++
		if first == "" {
			first = fmt.Sprintf(format, args...)
		}
	}
	ids := make([]string, 0, len(a.creators))
	for id := range a.creators {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		creator := a.creators[id]
		want := a.objects[id][creator]
		var holders []string
		var got int64
		for _, c := range counts {
			if v, ok := c.Objects[id]; ok {
				holders = append(holders, c.ServedBy)
				if c.ServedBy == creator {
					got = v
				}
			}
		}
		if len(holders) != 1 || holders[0] != creator || got != want {
			note("object %s, created on %s: held by %v, %d calls counted there, %d answered", id, creator, holders, got, want)
		}
	}
	names := make([]string, 0, len(a.single))
	for name := range a.single {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var want int64
		for _, calls := range a.single[name] {
			want += calls
		}
		var holders []string
		var got int64
		for _, c := range counts {
			if v, ok := c.Singletons[name]; ok {
				holders = append(holders, c.ServedBy)
				got += v
			}
		}
		if len(holders) != 1 || got != want {
			note("singleton %s: held by %v with %d calls counted, %d answered", name, holders, got, want)
		}
	}
	return n, first
}
