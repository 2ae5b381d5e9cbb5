package groupcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Binding modes, the same strings as the registry's (protocol.OnDemand and
// so on); the core does not import the registry.
const (
	PerSession = "per-session"
	OnDemand   = "on-demand"
	PerRequest = "per-request"
)

// Minimum and multiple of the report interval a removed replica drains for
// at most (see Step).
const (
	MinDrainTimeout       = 5 * time.Second
	DrainTimeoutIntervals = 10
)

// ErrUnknownReplica is returned for an id that is not a member.
var ErrUnknownReplica = analyzer.ErrUnknownReplica

// Settings are the group settings the core decides with.
type Settings struct {
	// Binding is PerSession, OnDemand or PerRequest; "" counts as
	// per-session.
	Binding string
	// Interval is the report interval (> 0).
	Interval time.Duration
	// UnidentifiedClients: the front door cannot tell returning clients
	// apart (GIOP; analyzer.SetUnidentifiedClients).
	UnidentifiedClients bool
	// MoveClients: the front door carries out planned moves itself, at a
	// client's next connection, whatever the binding (tcp groups: a
	// client address's next connection goes to the replica its move
	// names). Step then plans moves (Step.Planned) in a per-request group
	// too; advisories stay as the binding allows them, since a replica's
	// monitor cannot send a connection back.
	MoveClients bool
	// ClientRatesInLoad: the reports' client rates are in the load's unit
	// already (analyzer.SetClientRatesInLoad; tcp groups, whose balancer
	// lists each replica's clients from its connection table).
	ClientRatesInLoad bool
}

// Core is one group's decisions. Not safe for concurrent use.
type Core struct {
	an       *analyzer.Analyzer
	settings Settings
	order    []*member
	byID     map[string]*member
}

// member is one replica as the core knows it.
type member struct {
	id     string
	weight float64
	life   Lifecycle
	// reported: a report arrived since the last Step (see Step.Reset).
	reported bool
}

// New returns a core running s with settings set. It panics if s is nil or
// set.Interval is not positive (analyzer.New's preconditions).
func New(s strategy.Strategy, set Settings) *Core {
	c := &Core{an: analyzer.New(s, set.Interval), byID: map[string]*member{}}
	c.Configure(set)
	return c
}

// Configure changes the settings; a non-positive interval is ignored.
func (c *Core) Configure(set Settings) {
	if set.Interval <= 0 {
		set.Interval = c.an.Interval()
	}
	c.settings = set
	c.an.SetInterval(set.Interval)
	c.an.SetUnidentifiedClients(set.UnidentifiedClients)
	c.an.SetClientRatesInLoad(set.ClientRatesInLoad)
}

// SetStrategy switches the strategy (analyzer.SetStrategy).
func (c *Core) SetStrategy(s strategy.Strategy) { c.an.SetStrategy(s) }

// Add adds replica id (after the others) with its weight and lifecycle, or
// replaces both for a member. It returns the replica's state.
func (c *Core) Add(id string, weight float64, life Lifecycle) string {
	m := c.byID[id]
	if m == nil {
		m = &member{id: id}
		c.byID[id] = m
		c.order = append(c.order, m)
	}
	m.weight, m.life = weight, life
	c.sync()
	return life.State()
}

// Forget removes replica id at once (no drain); unknown ids are ignored.
func (c *Core) Forget(id string) {
	if c.byID[id] == nil {
		return
	}
	delete(c.byID, id)
	c.order = slices.DeleteFunc(c.order, func(m *member) bool { return m.id == id })
	c.sync()
}

// SetWeight changes replica id's weight.
func (c *Core) SetWeight(id string, weight float64) {
	if m := c.byID[id]; m != nil && m.weight != weight {
		m.weight = weight
		c.sync()
	}
}

// Lifecycle returns replica id's lifecycle (false: unknown id).
func (c *Core) Lifecycle(id string) (Lifecycle, bool) {
	if m := c.byID[id]; m != nil {
		return m.life, true
	}
	return Lifecycle{}, false
}

// RestoreAdmin gives replica id the administrative verdict of prev (a
// lifecycle Lifecycle returned before), keeping its health and ejection
// verdicts, and returns its lifecycle after it and whether that changed;
// an unknown id changes nothing.
func (c *Core) RestoreAdmin(id string, prev Lifecycle) (Lifecycle, bool) {
	m := c.byID[id]
	if m == nil {
		return Lifecycle{}, false
	}
	next := m.life.WithAdminOf(prev)
	if next == m.life {
		return next, false
	}
	m.life = next
	c.sync()
	return next, true
}

// Apply applies ev to replica id at now and returns its lifecycle after
// it and whether that changed. An unknown id is an error.
func (c *Core) Apply(id string, ev Event, now time.Time) (Lifecycle, bool, error) {
	m := c.byID[id]
	if m == nil {
		return Lifecycle{}, false, fmt.Errorf("%w %q", ErrUnknownReplica, id)
	}
	next, changed := m.life.Apply(ev, now)
	if changed {
		m.life = next
		c.sync()
	}
	return next, changed, nil
}

// ApplyAll applies ev to every member (HealthUp when the group stops
// checking) and reports whether any changed.
func (c *Core) ApplyAll(ev Event, now time.Time) bool {
	changed := false
	for _, m := range c.order {
		if next, ch := m.life.Apply(ev, now); ch {
			m.life, changed = next, true
		}
	}
	if changed {
		c.sync()
	}
	return changed
}

// State returns replica id's state ("" for an unknown id).
func (c *Core) State(id string) string {
	if m := c.byID[id]; m != nil {
		return m.life.State()
	}
	return ""
}

// sync gives the analyzer the membership, weights and states.
func (c *Core) sync() {
	infos := make([]analyzer.ReplicaInfo, 0, len(c.order))
	for _, m := range c.order {
		infos = append(infos, analyzer.ReplicaInfo{ID: m.id, Weight: m.weight, State: m.life.State()})
	}
	c.an.SetReplicas(infos)
}

// Report takes replica id's load report received at now
// (analyzer.Report) and returns the advisory its monitor gets, as the
// binding mode allows it (Advisory). The replica's per-balance load is
// reset at the next Step (Step.Reset).
func (c *Core) Report(id string, rep protocol.Report, now time.Time) (protocol.Advisory, error) {
	m := c.byID[id]
	if m == nil {
		return protocol.Advisory{}, fmt.Errorf("%w %q", ErrUnknownReplica, id)
	}
	adv, err := c.an.Report(id, rep, now)
	if err != nil {
		return protocol.Advisory{}, err
	}
	m.reported = true
	return c.forBinding(adv), nil
}

// Advisory returns replica id's current advisory as the binding mode
// allows it: only on-demand clients are ever sent back by their replicas,
// so per-session and per-request groups turn `high` into nominal (drain
// still sends per-session clients away from a replica that is leaving),
// MoveClients groups included. ReportInterval is set.
func (c *Core) Advisory(id string) protocol.Advisory {
	return c.forBinding(c.an.Advisory(id))
}

func (c *Core) forBinding(adv protocol.Advisory) protocol.Advisory {
	if adv.Advisory == protocol.High && c.settings.Binding != OnDemand {
		adv.Advisory, adv.Shed, adv.Clients = protocol.Nominal, 0, nil
	}
	adv.ReportInterval = protocol.Duration(c.an.Interval())
	return adv
}

// Bound tells the core the front door bound client to replica id
// (analyzer.Bound: completes a planned move).
func (c *Core) Bound(client, id string) { c.an.Bound(client, id) }

// DrainTimeout is how long a removed replica drains at most:
// DrainTimeoutIntervals report intervals, at least MinDrainTimeout.
func (c *Core) DrainTimeout() time.Duration {
	return max(DrainTimeoutIntervals*c.an.Interval(), MinDrainTimeout)
}
