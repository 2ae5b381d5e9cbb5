package analyzer

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Replica states, the same strings as protocol's (protocol.StateActive
// and so on); the analyzer does not import the registry, which touches the
// network and the disk.
const (
	StateActive   = "active"
	StateDraining = "draining"
	StateEjected  = "ejected"
	StateDown     = "down"
)

const (
	// StaleIntervals: a report older than this many report intervals no
	// longer counts; the replica is unreported (load unknown, not idle).
	StaleIntervals = 3
	// MoveExpiryIntervals: a planned move the client has not completed
	// within this many report intervals is dropped.
	MoveExpiryIntervals = 4
	// SettleReports: after a move, the replicas it touched must send this
	// many reports before the strategy plans again. The first report after
	// a move covers an interval in which the client was on both.
	SettleReports = 2
	// MovePinIntervals: a client the analyzer moved is not planned for
	// again for this many report intervals, doubled for each further move
	// within MoveMemoryIntervals of the previous one. Measured rates are
	// noisy; without this, two clients of nearly the same rate could be
	// swapped back and forth whenever the noise favours it.
	MovePinIntervals = 8
	// MoveMemoryIntervals: a client not moved for this long starts again
	// from the shortest pin.
	MoveMemoryIntervals = 240
	// ConfirmAnalyses: a tentative plan (strategy.Decision.Tentative) is
	// carried out once analyses with one outnumber those without by this
	// many since the last plan (see Analyzer.confirm): measurement noise
	// makes up gains that come and go.
	ConfirmAnalyses = 4
	// ShedHoldIntervals: after a `high` advisory that names no clients,
	// the strategy is not asked again for this many report intervals, so
	// the clients sent back show in the loads before more are.
	ShedHoldIntervals = 3
)

// ErrUnknownReplica is returned by Report for an id that is not a member.
var ErrUnknownReplica = errors.New("analyzer: unknown replica")

// ReplicaInfo is one member as the balancer knows it.
type ReplicaInfo struct {
	ID string
	// Weight is the relative capacity; not finite and > 0 counts as 1.
	Weight float64
	// State is StateActive, StateDraining, StateEjected or StateDown; ""
	// counts as active.
	State string
}

// ReplicaView is one replica in a Step.
type ReplicaView struct {
	ID, State string
	// Reported is true when the replica's last report is fresh (not older
	// than StaleIntervals intervals). Load, Sample, Metrics and Clients are
	// the last known values and mean nothing when it is false.
	Reported bool
	// Load is the effective (dampened) load; Sample the last raw one.
	Load, Sample float64
	// EverReported is true once the replica has reported at all, fresh or
	// not; ReportAge means something only then.
	EverReported bool
	// ReportAge is the age of the last report at Step's time (0 if none),
	// kept after the report goes stale.
	ReportAge time.Duration
	// Metrics are the last report's metrics. Shared: do not modify.
	Metrics map[string]float64
	// Clients are the bound clients the last report listed, with their
	// rates as reported. Shared: do not modify.
	Clients []protocol.ClientRate
	// Advisory is the replica's current advisory.
	Advisory protocol.Advisory
}

// Step is the result of one analyzer step.
type Step struct {
	Now time.Time
	// Replicas are every member, in SetReplicas order.
	Replicas []ReplicaView
	// Moves are the planned moves not yet completed nor expired, by
	// client: the front door binds each returning client to its To.
	Moves []strategy.Move
	// Changed is true when anything a snapshot or a monitor sees may have
	// changed since the previous step: reports, freshness, membership,
	// advisories, moves.
	Changed bool
}

// Analyzer is one group's analyzer. Not safe for concurrent use.
type Analyzer struct {
	strat    strategy.Strategy
	adaptive strategy.Adaptive // nil when strat is not adaptive
	interval time.Duration

	order []*replica
	byID  map[string]*replica
	moves map[string]*pendingMove // by client

	history map[string]*moveHistory // by client

	// confirmed counts the recent analyses with a tentative plan (see
	// confirm).
	confirmed int

	epoch     uint64
	holdUntil time.Time
	changed   bool
	// unidentified: the front door cannot tell returning clients apart
	// (SetUnidentifiedClients).
	unidentified bool
	// ratesInLoad: the reports' client rates are in the load's unit
	// already (SetClientRatesInLoad).
	ratesInLoad bool
	// now is the latest time Report or Step was given.
	now time.Time
}

// replica is one member's soft state.
type replica struct {
	info     ReplicaInfo
	reported bool // last is the time of a report
	fresh    bool // as of the last Step
	last     time.Time
	sample   float64
	load     float64
	metrics  map[string]float64
	clients  []protocol.ClientRate // as reported
	// rates are the listed clients' smoothed rates in load units.
	rates []clientRate
	adv   protocol.Advisory
	// settle counts the reports still due after a move touched the
	// replica before the strategy may plan again.
	settle int
}

// clientRate is one listed client's rate in load units, dampened like the
// load; seen counts the consecutive reports that listed it.
type clientRate struct {
	id   string
	rate float64
	seen int
}

type pendingMove struct {
	strategy.Move
	planned time.Time
}

// moveHistory is what the analyzer remembers of a client it moved, to pin
// it for a while (see MovePinIntervals).
type moveHistory struct {
	moves int       // moves within MoveMemoryIntervals of each other
	last  time.Time // when the last one completed
	until time.Time // not planned for again before this
}

// New returns an analyzer running s with report interval interval. It
// panics if s is nil or interval is not positive.
func New(s strategy.Strategy, interval time.Duration) *Analyzer {
	if s == nil || interval <= 0 {
		panic("analyzer: New needs a strategy and a positive interval")
	}
	a := &Analyzer{
		interval: interval, byID: map[string]*replica{},
		moves: map[string]*pendingMove{}, history: map[string]*moveHistory{},
	}
	a.SetStrategy(s)
	return a
}

// Strategy returns the strategy in use.
func (a *Analyzer) Strategy() strategy.Strategy { return a.strat }

// Interval returns the report interval.
func (a *Analyzer) Interval() time.Duration { return a.interval }

// SetStrategy switches the strategy at run time (the TAO paper's Component
// Configurator). Loads are kept; the new strategy's dampening applies from
// the next report. Switching to a strategy that is not adaptive drops the
// planned moves and turns `high` advisories nominal. A nil s is ignored.
func (a *Analyzer) SetStrategy(s strategy.Strategy) {
	if s == nil {
		return
	}
	a.strat = s
	a.adaptive, _ = s.(strategy.Adaptive)
	a.changed = true
	if a.adaptive == nil {
		clear(a.moves)
		a.holdUntil = time.Time{}
		for _, r := range a.order {
			if r.active() {
				a.setAdvisory(r, protocol.Nominal, 0, nil)
			}
		}
	}
}

// SetUnidentifiedClients says whether the group's front door cannot tell
// returning clients apart (GIOP: a request carries no client id), so that
// Target is never asked and a client sent back lands wherever the picker
// puts it, the least loaded replica. Such a front door cannot carry out a
// plan in which a replica both receives and sends clients (a swap): the
// client the receiving replica sends back is picked straight back onto
// it, being the least loaded, while the client meant for it goes to the
// next least loaded, and the plan's gain turns into a new imbalance. So a
// plan's moves out of a replica below the mean that the same plan moves
// clients into are left for a later plan: the moves into it go first, and
// once the loads have settled (the moves expire, the front door never
// completing them) the planner, which starts from the new loads, plans the
// rest (for a swap, a single move out of the replica that is now the
// busier, into the one that is now the least loaded).
func (a *Analyzer) SetUnidentifiedClients(unidentified bool) {
	a.unidentified = unidentified
}

// SetClientRatesInLoad says whether the reports' client rates are in the
// load's unit already, so that Report takes them as they are instead of
// converting them from calls/s (see Report). A tcp group's balancer lists
// each replica's clients itself, from its connection table, each with its
// share of the replica's traffic times the report's load: its agent sees
// only the balancer's connections, and a TCP stream has no calls to count.
func (a *Analyzer) SetClientRatesInLoad(inLoad bool) {
	a.ratesInLoad = inLoad
}

// SetInterval changes the report interval; d <= 0 is ignored.
func (a *Analyzer) SetInterval(d time.Duration) {
	if d > 0 && d != a.interval {
		a.interval = d
		a.changed = true
	}
}

// SetReplicas sets the membership, weights and states. Replicas not in rs
// are forgotten, with the moves from or to them. A replica that is not
// active gets `drain`, and moves planned to it are dropped.
func (a *Analyzer) SetReplicas(rs []ReplicaInfo) {
	order := make([]*replica, 0, len(rs))
	keep := make(map[string]*replica, len(rs))
	for _, info := range rs {
		if _, dup := keep[info.ID]; dup {
			continue
		}
		if info.State == "" {
			info.State = StateActive
		}
		r := a.byID[info.ID]
		if r == nil {
			r = &replica{}
			a.setAdvisory(r, protocol.Nominal, 0, nil)
		}
		if r.info != info {
			r.info = info
			a.changed = true
		}
		keep[info.ID] = r
		order = append(order, r)
	}
	if len(keep) != len(a.byID) {
		a.changed = true
	}
	a.order, a.byID = order, keep
	for c, mv := range a.moves {
		if from, to := a.byID[mv.From], a.byID[mv.To]; from == nil || to == nil || !to.active() {
			delete(a.moves, c)
			a.changed = true
		}
	}
	for _, r := range a.order {
		switch {
		case !r.active():
			a.setAdvisory(r, protocol.Drain, 0, nil)
		case r.adv.Advisory == protocol.Drain:
			a.setAdvisory(r, protocol.Nominal, 0, nil)
		}
	}
	a.releaseSources()
}

// Advisory returns the current advisory of replica id (nominal, epoch 0,
// for an unknown id), with ReportInterval set.
func (a *Analyzer) Advisory(id string) protocol.Advisory {
	r := a.byID[id]
	if r == nil {
		return protocol.Advisory{Advisory: protocol.Nominal, ReportInterval: protocol.Duration(a.interval)}
	}
	return a.advisoryOf(r)
}

func (a *Analyzer) advisoryOf(r *replica) protocol.Advisory {
	adv := r.adv
	adv.Clients = slices.Clone(adv.Clients)
	adv.ReportInterval = protocol.Duration(a.interval)
	return adv
}

// setAdvisory gives r a new advisory, with a new epoch, unless it already
// has this one.
func (a *Analyzer) setAdvisory(r *replica, level string, shed float64, clients []string) {
	if r.adv.Epoch != 0 && r.adv.Advisory == level && r.adv.Shed == shed && slices.Equal(r.adv.Clients, clients) {
		return
	}
	a.epoch++
	r.adv = protocol.Advisory{Advisory: level, Shed: shed, Epoch: a.epoch, Clients: clients}
	a.changed = true
}

// deferReceiversMoves drops from d the moves out of a replica below the
// group's mean load that d also moves clients into, and those clients from
// its `high` advice (an advice left without clients is dropped, not turned
// into an unnamed shed). When that would drop every move, d is kept as it
// is. See SetUnidentifiedClients.
func (a *Analyzer) deferReceiversMoves(d strategy.Decision) strategy.Decision {
	receives := make(map[string]bool, len(d.Moves))
	for _, mv := range d.Moves {
		receives[mv.To] = true
	}
	sumLoad, sumW := 0.0, 0.0
	for _, r := range a.order {
		if r.active() && r.fresh {
			sumLoad += max(0, r.load)
			sumW += r.weight()
		}
	}
	below := func(id string) bool {
		r := a.byID[id]
		return r != nil && sumW > 0 && max(0, r.load)/r.weight() < sumLoad/sumW
	}
	deferred := make(map[string]bool)
	var moves []strategy.Move
	for _, mv := range d.Moves {
		if receives[mv.From] && below(mv.From) {
			deferred[mv.Client] = true
			continue
		}
		moves = append(moves, mv)
	}
	if len(deferred) == 0 || len(moves) == 0 {
		return d
	}
	rates := make(map[string]float64, len(d.Moves))
	for _, mv := range d.Moves {
		rates[mv.Client] = mv.Rate
	}
	out := strategy.Decision{Moves: moves}
	for _, adv := range d.High {
		if len(adv.Clients) == 0 {
			out.High = append(out.High, adv)
			continue
		}
		var kept []string
		shed := 0.0
		for _, c := range adv.Clients {
			if !deferred[c] {
				kept = append(kept, c)
				shed += rates[c]
			}
		}
		if len(kept) > 0 {
			out.High = append(out.High, strategy.Advice{ID: adv.ID, Shed: shed, Clients: kept})
		}
	}
	return out
}

// releaseSources turns nominal the replicas whose `high` named clients of
// which no planned move is left.
func (a *Analyzer) releaseSources() {
	for _, r := range a.order {
		if !r.active() || r.adv.Advisory != protocol.High || len(r.adv.Clients) == 0 {
			continue
		}
		pending := false
		for _, c := range r.adv.Clients {
			if mv := a.moves[c]; mv != nil && mv.From == r.info.ID {
				pending = true
				break
			}
		}
		if !pending {
			a.setAdvisory(r, protocol.Nominal, 0, nil)
		}
	}
}

func (r *replica) active() bool { return r.info.State == StateActive }

func (r *replica) weight() float64 {
	if w := r.info.Weight; w > 0 && !math.IsInf(w, 1) {
		return w
	}
	return 1
}
