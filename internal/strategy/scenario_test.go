package strategy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/scripttest"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// The scenario scripts in testdata/*.txt (in package scripttest's format)
// drive one strategy through reports, probe results, time and picks. go
// test -run TestScenarios -rewrite rewrites the expected output from what
// the commands print now.
//
// Commands:
//
//	strategy NAME [param=value ...]   build the strategy (values are JSON when they parse)
//	replicas ID[:WEIGHT] ...          the eligible replicas (address http://ID.test); known ones keep their state
//	report ID metric=value ...        a fresh report (cpu, bw, rps, utilization, eps, inflight)
//	unreport ID                       the replica's report goes stale
//	inflight ID N                     calls the balancer has in flight to it
//	tick DURATION                     move the clock
//	round ID=KIND:TOOK,... ...        one probe round (KIND tcp|http, TOOK a duration or fail)
//	load ID rif=N latency=MS | load ID fail   one asynchronous load probe answer
//	targets                           which replicas the next round probes
//	pick n=N [seq=true] [path=P cost=C size=S]   picks on a picker built now
//	weights                           albl: the last round's weights and equation
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(*testing.T) func(scripttest.Cmd) string {
		return newWorld().run
	})
}

// world is one scenario's state.
type world struct {
	env      strategy.Env
	clock    *clocktest.Manual
	start    time.Time
	s        strategy.Strategy
	replicas []*strategy.Replica
	known    map[string]*strategy.Replica
}

func newWorld() *world {
	env, clock := seededEnv(1)
	return &world{env: env, clock: clock, start: clock.Now(), known: map[string]*strategy.Replica{}}
}

func (w *world) replica(id string) (*strategy.Replica, error) {
	for _, r := range w.replicas {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no replica %q", id)
}

func (w *world) run(c scripttest.Cmd) string {
	out, err := w.exec(c)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

func (w *world) exec(c scripttest.Cmd) (string, error) {
	if c.Name != "strategy" && c.Name != "replicas" && c.Name != "tick" && w.s == nil {
		return "", errors.New("no strategy yet")
	}
	switch c.Name {
	case "strategy":
		return w.cmdStrategy(c)
	case "replicas":
		return w.cmdReplicas(c)
	case "report":
		return w.cmdReport(c)
	case "unreport":
		r, err := w.replica(c.Arg(0))
		if err != nil {
			return "", err
		}
		r.Reported, r.Metrics = false, strategy.NoMetrics
		return "ok", nil
	case "inflight":
		r, err := w.replica(c.Arg(0))
		if err != nil {
			return "", err
		}
		n, err := strconv.ParseInt(c.Arg(1), 10, 64)
		if err != nil {
			return "", err
		}
		r.Live.Inflight.Store(n)
		return "ok", nil
	case "tick":
		d, err := time.ParseDuration(c.Arg(0))
		if err != nil {
			return "", err
		}
		w.clock.Advance(d)
		return "t=" + w.clock.Now().Sub(w.start).String(), nil
	case "round":
		return w.cmdRound(c)
	case "load":
		return w.cmdLoad(c)
	case "targets":
		p, ok := w.s.(strategy.Prober)
		if !ok {
			return "", errors.New("not a prober")
		}
		var ids []string
		for _, i := range p.ProbeTargets(w.replicas, w.clock.Now(), nil) {
			ids = append(ids, w.replicas[i].ID)
		}
		if len(ids) == 0 {
			return "probe none", nil
		}
		return "probe " + strings.Join(ids, " "), nil
	case "pick":
		return w.cmdPick(c)
	case "weights":
		weights, eq := strategy.ALBLWeightsOf(w.s)
		return fmt.Sprintf("eq=%d %s", eq, formatShares(weights)), nil
	}
	return "", fmt.Errorf("unknown command %q", c.Name)
}

func (w *world) cmdStrategy(c scripttest.Cmd) (string, error) {
	params := map[string]any{}
	for _, k := range c.Order {
		var v any
		if err := json.Unmarshal([]byte(c.Args[k]), &v); err != nil {
			v = c.Args[k]
		}
		params[k] = v
	}
	s, err := strategy.New(c.Arg(0), params, w.env)
	if err != nil {
		return "", err
	}
	w.s = s
	return "ok", nil
}

func (w *world) cmdReplicas(c scripttest.Cmd) (string, error) {
	w.replicas = nil
	for i, spec := range c.Pos {
		id, weight := spec, 1.0
		if a, b, ok := strings.Cut(spec, ":"); ok {
			v, err := strconv.ParseFloat(b, 64)
			if err != nil {
				return "", err
			}
			id, weight = a, v
		}
		r := w.known[id] // a replica already known keeps its report and counters
		if r == nil {
			r = &strategy.Replica{ID: id, Address: "http://" + id + ".test", Metrics: strategy.NoMetrics, Live: new(strategy.Live)}
			w.known[id] = r
		}
		r.Index, r.Weight = i, weight
		w.replicas = append(w.replicas, r)
	}
	return "ok", nil
}

func (w *world) cmdReport(c scripttest.Cmd) (string, error) {
	r, err := w.replica(c.Arg(0))
	if err != nil {
		return "", err
	}
	m := strategy.NoMetrics
	fields := map[string]*float64{
		"cpu": &m.CPU, "bw": &m.BW, "rps": &m.RPS, "utilization": &m.Utilization,
		"eps": &m.EPS, "inflight": &m.Inflight, "latency_ms": &m.LatencyMS,
	}
	for _, k := range c.Order {
		dst, ok := fields[k]
		if !ok {
			return "", fmt.Errorf("unknown metric %q", k)
		}
		v, err := strconv.ParseFloat(c.Args[k], 64)
		if err != nil {
			return "", err
		}
		*dst = v
	}
	r.Reported, r.Metrics = true, m
	r.Live.NoteReport(m.Inflight)
	return "ok", nil
}

func (w *world) cmdRound(c scripttest.Cmd) (string, error) {
	p, ok := w.s.(strategy.Prober)
	if !ok {
		return "", errors.New("not a prober")
	}
	var results []strategy.ProbeResult
	for _, id := range c.Order {
		for part := range strings.SplitSeq(c.Args[id], ",") {
			kind, took, ok := strings.Cut(part, ":")
			if !ok {
				return "", fmt.Errorf("probe %q: want KIND:TOOK", part)
			}
			res := strategy.ProbeResult{Replica: id, OK: took != "fail"}
			switch kind {
			case "tcp":
				res.Kind = strategy.ProbeTCPConnect
			case "http":
				res.Kind = strategy.ProbeHTTPGet
			default:
				return "", fmt.Errorf("probe kind %q", kind)
			}
			if res.OK {
				d, err := time.ParseDuration(took)
				if err != nil {
					return "", err
				}
				res.Took = d
			}
			results = append(results, res)
		}
	}
	if alert := p.Probed(results, w.clock.Now()); alert != "" {
		return "alert: " + alert, nil
	}
	return "ok", nil
}

func (w *world) cmdLoad(c scripttest.Cmd) (string, error) {
	p, ok := w.s.(strategy.Prober)
	if !ok {
		return "", errors.New("not a prober")
	}
	res := strategy.ProbeResult{Replica: c.Arg(0), Kind: strategy.ProbeLoad, OK: c.Arg(1) != "fail"}
	if res.OK {
		var err error
		if res.RIF, err = strconv.ParseFloat(c.Args["rif"], 64); err != nil {
			return "", fmt.Errorf("rif: %w", err)
		}
		if res.LatencyMS, err = strconv.ParseFloat(c.Args["latency"], 64); err != nil {
			return "", fmt.Errorf("latency: %w", err)
		}
	}
	if alert := p.Probed([]strategy.ProbeResult{res}, w.clock.Now()); alert != "" {
		return "alert: " + alert, nil
	}
	return "ok", nil
}

func (w *world) cmdPick(c scripttest.Cmd) (string, error) {
	n, err := strconv.Atoi(c.Args["n"])
	if err != nil {
		return "", fmt.Errorf("n: %w", err)
	}
	req := &strategy.Request{Path: c.Args["path"]}
	if v, ok := c.Args["cost"]; ok {
		if req.Cost, err = strconv.ParseFloat(v, 64); err != nil {
			return "", err
		}
	}
	if v, ok := c.Args["size"]; ok {
		if req.Size, err = strconv.ParseFloat(v, 64); err != nil {
			return "", err
		}
	}
	p := w.s.Picker(w.replicas)
	var ids []string
	failed := 0
	for range n {
		r, err := p.Pick(req)
		if errors.Is(err, strategy.ErrNoReplica) {
			failed++
			continue
		}
		if err != nil {
			return "", err
		}
		ids = append(ids, r.ID)
	}
	var b strings.Builder
	if c.Args["seq"] == "true" {
		b.WriteString(strings.Join(ids, " "))
	} else {
		counts := tally(ids)
		keys := make([]string, 0, len(counts))
		for id := range counts {
			keys = append(keys, id)
		}
		slices.Sort(keys)
		for i, id := range keys {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%d", id, counts[id])
		}
	}
	if failed > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "no-replica=%d", failed)
	}
	return b.String(), nil
}

// formatShares prints weights sorted by id with three decimals.
func formatShares(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := m[k]
		if math.IsNaN(v) {
			parts[i] = k + "=NaN"
			continue
		}
		parts[i] = fmt.Sprintf("%s=%.3f", k, v)
	}
	return strings.Join(parts, " ")
}
