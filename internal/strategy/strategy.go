package strategy

import (
	"errors"
	"math"
	"sync/atomic"
	"time"
)

// ErrNoReplica is returned by Pick when no replica can take the call or
// binding. Front doors map it to 503 (HTTP), TRANSIENT (GIOP) or a refused
// connection (TCP).
var ErrNoReplica = errors.New("strategy: no replica available")

// Replica is one member of a group as a strategy sees it in a snapshot.
// Everything but Live is immutable once the snapshot is published; Live is
// shared by all snapshots of the same replica and updated atomically on the
// hot path.
type Replica struct {
	// Index is the replica's position in the snapshot's slice.
	Index int
	// ID is the replica's id.
	ID string
	// Address is the replica's registered address (base URL for HTTP),
	// for strategies configured per replica (ett's capacities).
	Address string
	// Weight is the replica's relative capacity (> 0).
	Weight float64
	// Reported is true when the replica has a fresh load report (not older
	// than three report intervals).
	Reported bool
	// Load is the analyzer's effective (dampened) load; meaningful only when
	// Reported.
	Load float64
	// Metrics are the standard metrics of the last fresh report.
	Metrics Metrics
	// Clients is how many bound clients the last fresh report listed (0
	// when unknown). The adaptive strategies estimate one binding's load
	// from it (per_balance_load "auto").
	Clients int
	// Live holds the counters the hot path updates.
	Live *Live
}

// Metrics are the standard metrics of a load report (protocol.Metric*).
// NaN means "not reported".
type Metrics struct {
	Inflight    float64
	RPS         float64
	LatencyMS   float64
	CPU         float64
	Utilization float64
	EPS         float64
	BW          float64
	// CPUOther is the share of the replica's CPU that work other than its
	// server took (protocol.MetricCPUOther).
	CPUOther float64
}

// NoMetrics is a Metrics with every field unreported.
var NoMetrics = Metrics{
	Inflight: math.NaN(), RPS: math.NaN(), LatencyMS: math.NaN(), CPU: math.NaN(),
	Utilization: math.NaN(), EPS: math.NaN(), BW: math.NaN(), CPUOther: math.NaN(),
}

// Inflight is the replica's calls in flight now: the ones the balancer
// itself has in flight to it (per-request proxying) plus, while its report
// is fresh, the ones its last report showed beyond the balancer's own when
// that report arrived (calls that reach the replica without this balancer:
// bound clients, other balancers). The reported count is not a floor: a
// replica's queue drains between reports, and a count held at the
// reported value for a whole interval hides that from every strategy that
// compares calls in flight.
func (r *Replica) Inflight() float64 {
	n := float64(r.Live.Inflight.Load())
	if r.Reported {
		n += r.Live.Direct()
	}
	return n
}

// Live is a replica's hot-path state, kept across snapshots. The zero value
// is ready to use. Must not be copied.
type Live struct {
	// Inflight counts calls the balancer has in flight to the replica.
	Inflight atomic.Int64
	// Bindings counts clients bound to the replica since its last report
	// was published (reset with the per-balance load; see package
	// groupcore, "Per-balance reset").
	Bindings atomic.Int64
	// extra is the per-balance load (float64 bits) added by picks since the
	// last report was published (least-loaded; see ResetExtra).
	extra atomic.Uint64
	// ewma is strategy-private state (float64 bits), e.g. peak-ewma's cost.
	ewma atomic.Uint64
	// stamp is the time (unix ns) ewma was last updated.
	stamp atomic.Int64
	// direct is the calls in flight (float64 bits) the last report showed
	// beyond the balancer's own when it arrived.
	direct atomic.Uint64
}

// NoteReport records the calls in flight a replica reported (NaN when its
// report has none; a value that is not a finite count counts as none) at the moment the report arrives: the part beyond the
// balancer's own calls in flight then is kept as the replica's direct
// calls until the next report. The balancer calls it for every accepted
// report.
func (l *Live) NoteReport(inflight float64) {
	d := 0.0
	if inflight > 0 && !math.IsInf(inflight, 1) {
		d = max(inflight-float64(l.Inflight.Load()), 0)
	}
	l.direct.Store(math.Float64bits(d))
}

// Direct returns the calls in flight the last report showed beyond the
// balancer's own when it arrived (see NoteReport).
func (l *Live) Direct() float64 { return math.Float64frombits(l.direct.Load()) }

// Extra returns the per-balance load added since the last reset.
func (l *Live) Extra() float64 { return math.Float64frombits(l.extra.Load()) }

// AddExtra adds v to the per-balance load.
func (l *Live) AddExtra(v float64) {
	for {
		old := l.extra.Load()
		if l.extra.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ResetExtra clears the per-balance load. The balancer calls it, with
// Bindings.Store(0), where package groupcore decides ("Per-balance reset":
// at the first analyzer step after a report).
func (l *Live) ResetExtra() { l.extra.Store(0) }

// Request is what a front door knows of a call or binding request when it
// asks for a pick. It is passed by pointer and must not be retained.
type Request struct {
	// Key is the affinity key for keyed strategies (consistent-hash),
	// extracted by the front door as the picker's KeySpec says.
	Key string
	// Client is the Fulcrum-Client id, if the client sent one.
	Client string
	// Path is the request's path (HTTP), for strategies that look up a
	// call's cost by path (ett). The front door sets it without copying.
	Path string
	// Cost is the call's computing cost, cc(n) of ett, in the unit of the
	// replicas' CPU capacity; 0 when not given (the Fulcrum-Cost header's
	// cpu part).
	Cost float64
	// Size is the call's data to transfer, d(n) of ett, in the unit of the
	// replicas' bandwidth capacity (bytes by default); 0 when not given
	// (the Fulcrum-Cost header's data part).
	Size float64
}

// Picker picks a replica. It is built over one immutable snapshot and must
// be safe for concurrent use; Pick must not block, take a group-wide lock or
// allocate.
type Picker interface {
	Pick(r *Request) (*Replica, error)
}

// KeySource says where a keyed strategy's key comes from.
type KeySource int

const (
	// KeyNone: the strategy needs no key.
	KeyNone KeySource = iota
	// KeyHeader: a request header named KeySpec.Name.
	KeyHeader
	// KeyCookie: a cookie named KeySpec.Name.
	KeyCookie
	// KeyClientAddress: the client's IP address.
	KeyClientAddress
)

// KeySpec tells a front door which key to put in Request.Key.
type KeySpec struct {
	Source KeySource
	Name   string
}

// Keyed is implemented by strategies whose picks depend on a request key.
type Keyed interface {
	KeySpec() KeySpec
}

// Strategy is a group's pluggable policy. A Strategy value holds its
// validated configuration and seams (clock, randomness); per-snapshot state
// lives in the pickers it builds. Strategies that learn across snapshots
// (albl's probed weights, prequal's probe pool, weighted-round-robin-orca's
// weight time stamps) keep that state in the value, safe for concurrent
// use; a new value (a parameter change) starts afresh.
type Strategy interface {
	// Name is the registered name.
	Name() string
	// Picker builds a picker over the replicas eligible for new bindings.
	// replicas may be empty: the picker then returns ErrNoReplica.
	Picker(replicas []*Replica) Picker
}

// Observer is implemented by strategies that learn from finished calls
// (peak-ewma): the front door reports each proxied call's latency.
type Observer interface {
	Observe(r *Replica, latency time.Duration, failed bool)
}

// Env carries the seams a strategy is built with: time and randomness.
type Env struct {
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// Rand is the source of randomness; a seeded math/rand/v2 PCG when nil.
	Rand Rand
}

// Rand is the randomness a strategy may use. Implementations must be safe
// for concurrent use.
type Rand interface {
	// IntN returns a pseudo-random number in [0, n). n > 0.
	IntN(n int) int
	// Float64 returns a pseudo-random number in [0, 1).
	Float64() float64
}
