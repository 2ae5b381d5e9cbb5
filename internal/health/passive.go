package health

import (
	"sort"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// MaxEjectionMultiplier caps how long repeated ejections grow: an ejection
// lasts at most MaxEjectionMultiplier × BaseEjection.
const MaxEjectionMultiplier = 10

// Defaults applied by NewPassive to a zero ConsecutiveFailures or
// BaseEjection (the same as registry.WithDefaults).
const (
	DefaultConsecutiveFailures = 5
	DefaultBaseEjection        = 30 * time.Second
)

// Passive is passive ejection (outlier detection) for one group's
// replicas:
//
//   - ConsecutiveFailures failed calls in a row eject a replica (a negative
//     ConsecutiveFailures disables ejection); a successful call resets the
//     count.
//   - The n-th ejection in a row lasts n × BaseEjection, at most
//     MaxEjectionMultiplier × BaseEjection.
//   - A replica that, once back, is not ejected again for as long as its
//     last ejection lasted is forgiven: its next ejection is a first one.
//   - At most MaxEjectedPercent of the group's replicas (rounded down) are
//     ejected at once; a replica over the threshold while the cap is
//     reached stays in, and is ejected on its next failure if room has
//     been made.
//
// Time comes in as arguments; Passive never reads the clock. Not safe for
// concurrent use.
type Passive struct {
	cfg     protocol.Passive
	reps    map[string]*outlier
	ejected int
}

type outlier struct {
	// failures counts failed calls in a row.
	failures int
	// streak counts ejections in a row (not yet forgiven).
	streak int
	// until is when the current ejection ends; zero when not ejected.
	until time.Time
	// back is when the replica last came back from an ejection, and
	// lastLen how long that ejection was.
	back    time.Time
	lastLen time.Duration
}

// NewPassive returns the ejection state of a group with no replicas.
func NewPassive(cfg protocol.Passive) *Passive {
	p := &Passive{reps: map[string]*outlier{}}
	p.SetConfig(cfg)
	return p
}

// SetConfig changes the settings; ejections in progress keep their end.
func (p *Passive) SetConfig(cfg protocol.Passive) {
	if cfg.ConsecutiveFailures == 0 {
		cfg.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if cfg.BaseEjection <= 0 {
		cfg.BaseEjection = protocol.Duration(DefaultBaseEjection)
	}
	p.cfg = cfg
}

// Add starts tracking a replica (a no-op when already tracked).
func (p *Passive) Add(id string) {
	if p.reps[id] == nil {
		p.reps[id] = &outlier{}
	}
}

// Remove stops tracking a replica.
func (p *Passive) Remove(id string) {
	if o := p.reps[id]; o != nil && !o.until.IsZero() {
		p.ejected--
	}
	delete(p.reps, id)
}

// Ejected reports whether id is ejected.
func (p *Passive) Ejected(id string) bool {
	o := p.reps[id]
	return o != nil && !o.until.IsZero()
}

// EjectedUntil is when id's ejection ends (zero when not ejected).
func (p *Passive) EjectedUntil(id string) time.Time {
	if o := p.reps[id]; o != nil {
		return o.until
	}
	return time.Time{}
}

// Observe feeds one finished call to replica id (tracked from then on if it
// was not). It returns a Change to Ejected when the call ejects the
// replica. Calls finishing while the replica is ejected are ignored.
func (p *Passive) Observe(id string, failed bool, now time.Time) (Change, bool) {
	p.Add(id)
	o := p.reps[id]
	if !o.until.IsZero() {
		return Change{}, false
	}
	if o.streak > 0 && now.Sub(o.back) >= o.lastLen {
		o.streak = 0
	}
	if !failed {
		o.failures = 0
		return Change{}, false
	}
	o.failures++
	if p.cfg.ConsecutiveFailures < 0 || o.failures < p.cfg.ConsecutiveFailures || !p.room() {
		return Change{}, false
	}
	o.streak++
	d := time.Duration(min(o.streak, MaxEjectionMultiplier)) * p.cfg.BaseEjection.D()
	o.until = now.Add(d)
	o.lastLen = d
	o.failures = 0
	p.ejected++
	return Change{ID: id, State: Ejected}, true
}

// room reports whether one more replica may be ejected.
func (p *Passive) room() bool {
	return p.ejected < len(p.reps)*p.cfg.MaxEjectedPercent/100
}

// Tick brings back the replicas whose ejection has ended by now, as
// Changes to Up sorted by id.
func (p *Passive) Tick(now time.Time) []Change {
	var out []Change
	for id, o := range p.reps {
		if o.until.IsZero() || now.Before(o.until) {
			continue
		}
		o.until = time.Time{}
		o.back = now
		p.ejected--
		out = append(out, Change{ID: id, State: Up})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// NextReturn is the earliest end of an ejection in progress; ok is false
// when no replica is ejected.
func (p *Passive) NextReturn() (at time.Time, ok bool) {
	for _, o := range p.reps {
		if !o.until.IsZero() && (!ok || o.until.Before(at)) {
			at, ok = o.until, true
		}
	}
	return at, ok
}
