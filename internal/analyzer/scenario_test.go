package analyzer_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestScenarios runs the scripts in testdata/*.txt, in package
// scripttest's format; scenarioHandlers below maps each command to its
// handler. go test -run TestScenarios -rewrite rewrites the expected
// output from what the commands print now.
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(scripttest.Cmd) string {
		s := newScenario(t)
		return s.run
	})
}

// scenario is one script's world: an analyzer driven by an injected clock,
// the strategy's seeded randomness, each replica's hot-path state, the
// snapshot of the last step, and optionally simulated clients whose calls
// make the replicas' loads.
type scenario struct {
	t        *testing.T
	start    time.Time
	now      time.Time
	interval time.Duration
	an       *analyzer.Analyzer
	infos    []analyzer.ReplicaInfo
	live     map[string]*strategy.Live
	last     analyzer.Step
	clients  map[string]*simClient
	obeyed   map[string]uint64 // replica → epoch its monitor obeyed
	// unidentified: the simulated front door cannot tell returning
	// clients apart (frontdoor ids=false).
	unidentified bool
	// lingering are clients' old listings still reported by the replica
	// they left (frontdoor ids=false).
	lingering []simLinger
}

// simLinger is a moved client's old connection, still listed by the
// replica it left for rounds more reports.
type simLinger struct {
	id, replica string
	rate        float64
	rounds      int
}

// simClient is a simulated client calling at rate calls/s on replica.
type simClient struct {
	id      string
	rate    float64
	replica string
}

func newScenario(t *testing.T) *scenario {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return &scenario{
		t: t, start: start, now: start, interval: 500 * time.Millisecond,
		live: map[string]*strategy.Live{}, clients: map[string]*simClient{}, obeyed: map[string]uint64{},
	}
}

// scenarioHandlers maps each command to its handler.
var scenarioHandlers map[string]func(*scenario, scripttest.Cmd) string

func init() {
	scenarioHandlers = map[string]func(*scenario, scripttest.Cmd) string{
		"strategy":       (*scenario).cmdStrategy,
		"interval":       (*scenario).cmdInterval,
		"add-replica":    (*scenario).cmdAddReplica,
		"remove-replica": (*scenario).cmdRemoveReplica,
		"set-state":      (*scenario).cmdSetState,
		"report":         (*scenario).cmdReport,
		"loads":          (*scenario).cmdLoads,
		"tick":           (*scenario).cmdTick,
		"step":           (*scenario).cmdStep,
		"pick":           (*scenario).cmdPick,
		"advisories":     (*scenario).cmdAdvisories,
		"bind":           (*scenario).cmdBind,
		"target":         (*scenario).cmdTarget,
		"world":          (*scenario).cmdWorld,
		"run":            (*scenario).cmdRun,
		"arrive":         (*scenario).cmdArrive,
		"frontdoor":      (*scenario).cmdFrontDoor,
	}
}

func (s *scenario) run(c scripttest.Cmd) string {
	h, ok := scenarioHandlers[c.Name]
	if !ok {
		s.t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	}
	if s.an == nil && c.Name != "strategy" && c.Name != "interval" && c.Name != "add-replica" {
		s.t.Fatalf("line %d: %s before strategy", c.Line, c.Name)
	}
	return h(s, c)
}

// --- argument helpers ---

func (s *scenario) arg(c scripttest.Cmd, key string) string {
	v, ok := c.Args[key]
	if !ok {
		s.t.Fatalf("line %d: %s needs %s=", c.Line, c.Name, key)
	}
	return v
}

func (s *scenario) argOr(c scripttest.Cmd, key, def string) string {
	if v, ok := c.Args[key]; ok {
		return v
	}
	return def
}

func (s *scenario) float(c scripttest.Cmd, v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		s.t.Fatalf("line %d: bad number %q", c.Line, v)
	}
	return f
}

func (s *scenario) duration(c scripttest.Cmd) time.Duration {
	if len(c.Pos) != 1 {
		s.t.Fatalf("line %d: %s needs a duration", c.Line, c.Name)
	}
	d, err := time.ParseDuration(c.Pos[0])
	if err != nil {
		s.t.Fatalf("line %d: %v", c.Line, err)
	}
	return d
}

// clientRates parses "c1:100,c2:50".
func (s *scenario) clientRates(c scripttest.Cmd, v string) []protocol.ClientRate {
	var out []protocol.ClientRate
	for _, f := range strings.Split(v, ",") {
		if f == "" {
			continue
		}
		id, rate, ok := strings.Cut(f, ":")
		if !ok {
			s.t.Fatalf("line %d: client %q must be id:rate", c.Line, f)
		}
		out = append(out, protocol.ClientRate{ID: id, Rate: s.float(c, rate)})
	}
	return out
}

// --- output helpers ---

func num(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

func advString(a protocol.Advisory) string {
	var b strings.Builder
	b.WriteString(a.Advisory)
	if a.Advisory == protocol.High {
		fmt.Fprintf(&b, " shed=%s", num(a.Shed))
	}
	fmt.Fprintf(&b, " epoch=%d", a.Epoch)
	if len(a.Clients) > 0 {
		fmt.Fprintf(&b, " clients=%s", strings.Join(a.Clients, ","))
	}
	return b.String()
}

func (s *scenario) elapsed() string { return s.now.Sub(s.start).String() }

func (s *scenario) ids() []string {
	ids := make([]string, len(s.infos))
	for i, in := range s.infos {
		ids[i] = in.ID
	}
	return ids
}

// --- commands ---

// strategy NAME [seed=N] [param=value ...]: builds the strategy (the first
// time, the analyzer too) or switches to it at run time.
func (s *scenario) cmdStrategy(c scripttest.Cmd) string {
	if len(c.Pos) != 1 {
		s.t.Fatalf("line %d: strategy needs a name", c.Line)
	}
	seed := uint64(1)
	params := map[string]any{}
	for _, k := range c.Order {
		v := c.Args[k]
		if k == "seed" {
			seed = uint64(s.float(c, v))
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			params[k] = f
		} else {
			params[k] = v
		}
	}
	st, err := strategy.New(c.Pos[0], params, strategy.Env{
		Now:  func() time.Time { return s.now },
		Rand: strategy.NewRand(seed),
	})
	if err != nil {
		return "error: " + err.Error()
	}
	if s.an == nil {
		s.an = analyzer.New(st, s.interval)
		s.an.SetReplicas(s.infos)
	} else {
		s.an.SetStrategy(st)
	}
	return "ok"
}

// interval D: the report interval.
func (s *scenario) cmdInterval(c scripttest.Cmd) string {
	s.interval = s.duration(c)
	if s.an != nil {
		s.an.SetInterval(s.interval)
	}
	return "ok"
}

func (s *scenario) setReplicas() {
	if s.an != nil {
		s.an.SetReplicas(s.infos)
	}
}

// add-replica id=ID [weight=W] [state=S]
func (s *scenario) cmdAddReplica(c scripttest.Cmd) string {
	id := s.arg(c, "id")
	s.infos = append(s.infos, analyzer.ReplicaInfo{
		ID: id, Weight: s.float(c, s.argOr(c, "weight", "1")), State: s.argOr(c, "state", analyzer.StateActive),
	})
	s.live[id] = new(strategy.Live)
	s.setReplicas()
	return "ok"
}

// remove-replica id=ID
func (s *scenario) cmdRemoveReplica(c scripttest.Cmd) string {
	id := s.arg(c, "id")
	s.infos = slices.DeleteFunc(s.infos, func(in analyzer.ReplicaInfo) bool { return in.ID == id })
	s.setReplicas()
	return "ok"
}

// set-state id=ID state=S
func (s *scenario) cmdSetState(c scripttest.Cmd) string {
	id := s.arg(c, "id")
	for i := range s.infos {
		if s.infos[i].ID == id {
			s.infos[i].State = s.arg(c, "state")
		}
	}
	s.setReplicas()
	return s.cmdAdvisories(c)
}

// report id=ID load=L [clients=c1:r1,...] [rps=R]: one report; prints the
// advisory it is answered with.
func (s *scenario) cmdReport(c scripttest.Cmd) string {
	id := s.arg(c, "id")
	rep := protocol.Report{Load: s.float(c, s.arg(c, "load"))}
	if v, ok := c.Args["clients"]; ok {
		rep.Clients = s.clientRates(c, v)
	}
	if v, ok := c.Args["rps"]; ok {
		rep.Metrics = map[string]float64{protocol.MetricRPS: s.float(c, v)}
	}
	return s.report(id, rep)
}

func (s *scenario) report(id string, rep protocol.Report) string {
	adv, err := s.an.Report(id, rep, s.now)
	if err != nil {
		return id + ": error: " + err.Error()
	}
	if l := s.live[id]; l != nil {
		l.ResetExtra()
		l.Bindings.Store(0)
	}
	return id + ": " + advString(adv)
}

// loads ID=L ...: a report without clients from each replica, in order.
func (s *scenario) cmdLoads(c scripttest.Cmd) string {
	var out []string
	for _, id := range c.Order {
		out = append(out, s.report(id, protocol.Report{Load: s.float(c, c.Args[id])}))
	}
	return strings.Join(out, "\n")
}

// tick D: advances the clock.
func (s *scenario) cmdTick(c scripttest.Cmd) string {
	s.now = s.now.Add(s.duration(c))
	return "t=" + s.elapsed()
}

// step: one analyzer step; prints every replica's view, the pending moves
// and whether anything changed.
func (s *scenario) cmdStep(scripttest.Cmd) string {
	s.last = s.an.Step(s.now)
	var b strings.Builder
	for _, v := range s.last.Replicas {
		fmt.Fprintf(&b, "%s %s", v.ID, v.State)
		if v.Reported {
			fmt.Fprintf(&b, " load=%s sample=%s age=%s", num(v.Load), num(v.Sample), v.ReportAge)
		} else {
			b.WriteString(" unreported")
		}
		fmt.Fprintf(&b, ": %s\n", advString(v.Advisory))
	}
	for _, m := range s.last.Moves {
		fmt.Fprintf(&b, "move %s %s->%s rate=%s\n", m.Client, m.From, m.To, num(m.Rate))
	}
	fmt.Fprintf(&b, "changed=%t", s.last.Changed)
	return b.String()
}

// snapshot builds the strategy's view of the eligible replicas from the
// last step, as the balancer publishes it, and the picker over it.
func (s *scenario) picker() (strategy.Picker, []*strategy.Replica) {
	views := map[string]analyzer.ReplicaView{}
	for _, v := range s.last.Replicas {
		views[v.ID] = v
	}
	var eligible []*strategy.Replica
	for _, in := range s.infos {
		if in.State != analyzer.StateActive {
			continue
		}
		r := &strategy.Replica{Index: len(eligible), ID: in.ID, Weight: in.Weight, Metrics: strategy.NoMetrics, Live: s.live[in.ID]}
		if v, ok := views[in.ID]; ok && v.Reported {
			r.Reported, r.Load, r.Clients = true, v.Load, len(v.Clients)
		}
		eligible = append(eligible, r)
	}
	return s.an.Strategy().Picker(eligible), eligible
}

// pick n=N: N picks on the last step's snapshot (per-balance load
// accumulating as it would between two reports); prints how many each
// replica got.
func (s *scenario) cmdPick(c scripttest.Cmd) string {
	n := int(s.float(c, s.arg(c, "n")))
	p, _ := s.picker()
	counts := map[string]int{}
	failed := 0
	for range n {
		r, err := p.Pick(&strategy.Request{})
		if err != nil {
			failed++
			continue
		}
		counts[r.ID]++
	}
	var out []string
	for _, id := range s.ids() {
		out = append(out, fmt.Sprintf("%s=%d", id, counts[id]))
	}
	if failed > 0 {
		out = append(out, fmt.Sprintf("failed=%d", failed))
	}
	return strings.Join(out, " ")
}

// advisories: every replica's current advisory.
func (s *scenario) cmdAdvisories(scripttest.Cmd) string {
	var out []string
	for _, id := range s.ids() {
		out = append(out, id+": "+advString(s.an.Advisory(id)))
	}
	return strings.Join(out, "\n")
}

// bind client=C replica=R: the front door bound C to R.
func (s *scenario) cmdBind(c scripttest.Cmd) string {
	client, id := s.arg(c, "client"), s.arg(c, "replica")
	s.an.Bound(client, id)
	if sc := s.clients[client]; sc != nil {
		sc.replica = id
	}
	return s.cmdAdvisories(c)
}

// target client=C: where a planned move sends C.
func (s *scenario) cmdTarget(c scripttest.Cmd) string {
	client := s.arg(c, "client")
	if to, ok := s.an.Target(client); ok {
		return client + " -> " + to
	}
	return client + ": no planned move"
}
