package groupcore_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestScenarios runs the scripts in testdata/*.txt (package scripttest's
// format). Commands:
//
//	group binding=B [strategy=S] [interval=D] [move-clients=true] [rates-in-load=true]
//	                                            a fresh core (Settings.MoveClients, ClientRatesInLoad)
//	add ID [weight=W]                           a registered replica
//	event ID EVENT                              a lifecycle event (lifecycle.go's names)
//	report ID load=L [rps=R] [inflight=N] [clients=c:rate,...]
//	advisory ID
//	tick D                                      move the clock
//	step [inflight=ID:N,...]                    a step with the caller's calls in flight
//	bound CLIENT ID                             the front door bound CLIENT to ID (Core.Bound)
//
// go test -run TestScenarios -rewrite rewrites the expected output.
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(scripttest.Cmd) string {
		w := &world{t: t, now: t0}
		return w.run
	})
}

type world struct {
	t   *testing.T
	now time.Time
	c   *groupcore.Core
}

var events = map[string]groupcore.Event{}

func init() {
	for ev := groupcore.HealthDown; ev <= groupcore.Remove; ev++ {
		events[ev.String()] = ev
	}
}

func (w *world) run(c scripttest.Cmd) string {
	if w.c == nil && c.Name != "group" {
		w.t.Fatalf("line %d: %s before group", c.Line, c.Name)
	}
	switch c.Name {
	case "group":
		return w.group(c)
	case "add":
		weight := 1.0
		if v, ok := c.Args["weight"]; ok {
			weight = w.float(c, v)
		}
		return c.Arg(0) + ": " + w.c.Add(c.Arg(0), weight, groupcore.Lifecycle{})
	case "event":
		ev, ok := events[c.Arg(1)]
		if !ok {
			w.t.Fatalf("line %d: unknown event %q", c.Line, c.Arg(1))
		}
		life, changed, err := w.c.Apply(c.Arg(0), ev, w.now)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%s: %s changed=%v draining=%v removing=%v", c.Arg(0), life.State(), changed, life.Draining(), life.Removing())
	case "report":
		return w.report(c)
	case "advisory":
		return c.Arg(0) + ": " + advString(w.c.Advisory(c.Arg(0)))
	case "tick":
		d, err := time.ParseDuration(c.Arg(0))
		if err != nil {
			w.t.Fatalf("line %d: %v", c.Line, err)
		}
		w.now = w.now.Add(d)
		return "now +" + w.now.Sub(t0).String()
	case "step":
		return w.step(c)
	case "bound":
		w.c.Bound(c.Arg(0), c.Arg(1))
		return "ok"
	}
	w.t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	return ""
}

func (w *world) group(c scripttest.Cmd) string {
	name := strategy.RoundRobinName
	if v, ok := c.Args["strategy"]; ok {
		name = v
	}
	interval := 100 * time.Millisecond
	if v, ok := c.Args["interval"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			w.t.Fatalf("line %d: %v", c.Line, err)
		}
		interval = d
	}
	s, err := strategy.New(name, nil, strategy.Env{Now: func() time.Time { return w.now }, Rand: strategy.NewRand(1)})
	if err != nil {
		w.t.Fatalf("line %d: %v", c.Line, err)
	}
	w.c = groupcore.New(s, groupcore.Settings{
		Binding: c.Args["binding"], Interval: interval,
		MoveClients: c.Args["move-clients"] == "true", ClientRatesInLoad: c.Args["rates-in-load"] == "true",
	})
	return fmt.Sprintf("ok drain-timeout=%s", w.c.DrainTimeout())
}

func (w *world) report(c scripttest.Cmd) string {
	rep := protocol.Report{Load: w.float(c, c.Args["load"]), Metrics: map[string]float64{}}
	for _, k := range []string{protocol.MetricRPS, protocol.MetricInflight} {
		if v, ok := c.Args[k]; ok {
			rep.Metrics[k] = w.float(c, v)
		}
	}
	for _, f := range strings.Split(c.Args["clients"], ",") {
		if id, rate, ok := strings.Cut(f, ":"); ok {
			rep.Clients = append(rep.Clients, protocol.ClientRate{ID: id, Rate: w.float(c, rate)})
		}
	}
	adv, err := w.c.Report(c.Arg(0), rep, w.now)
	if err != nil {
		return "error: " + err.Error()
	}
	return c.Arg(0) + ": " + advString(adv)
}

func (w *world) step(c scripttest.Cmd) string {
	inflight := map[string]int64{}
	for _, f := range strings.Split(c.Args["inflight"], ",") {
		if id, n, ok := strings.Cut(f, ":"); ok {
			inflight[id] = int64(w.float(c, n))
		}
	}
	lead := groupcore.Lead{Plan: c.Args["plan"] != "false", Remove: c.Args["remove"] != "false"}
	st := w.c.StepAs(w.now, func(id string) int64 { return inflight[id] }, lead)
	var b strings.Builder
	for _, v := range st.Replicas {
		load := "unreported"
		if v.Reported {
			load = "load=" + num(v.Load)
		}
		fmt.Fprintf(&b, "%s %s %s: %s\n", v.ID, v.State, load, advString(v.Advisory))
	}
	for _, mv := range st.Moves {
		fmt.Fprintf(&b, "move %s %s->%s\n", mv.Client, mv.From, mv.To)
	}
	for _, mv := range st.Planned {
		fmt.Fprintf(&b, "planned %s %s->%s\n", mv.Client, mv.From, mv.To)
	}
	if len(st.Reset) > 0 {
		fmt.Fprintf(&b, "reset %s\n", strings.Join(st.Reset, ","))
	}
	if len(st.Removed) > 0 {
		fmt.Fprintf(&b, "removed %s\n", strings.Join(st.Removed, ","))
	}
	return b.String()
}

func (w *world) float(c scripttest.Cmd, v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		w.t.Fatalf("line %d: bad number %q", c.Line, v)
	}
	return f
}

func num(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

func advString(a protocol.Advisory) string {
	var b strings.Builder
	b.WriteString(a.Advisory)
	if a.Advisory == protocol.High {
		fmt.Fprintf(&b, " shed=%s", num(a.Shed))
	}
	if len(a.Clients) > 0 {
		fmt.Fprintf(&b, " clients=%s", strings.Join(a.Clients, ","))
	}
	fmt.Fprintf(&b, " interval=%s", a.ReportInterval.D())
	return b.String()
}
