package strategy_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// The scenario scripts in testdata/*.txt drive one strategy through
// reports, probe results, time and picks. Each block is
//
//	command arg key=value ...
//	----
//	expected output
//
// separated by blank lines; lines starting with # outside blocks are
// comments. go test -run TestScenarios -rewrite rewrites the expected
// output from what the commands print now.
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
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt scenarios")

func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			blocks, err := parseScript(path)
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld()
			outs := make([]string, len(blocks))
			for i, b := range blocks {
				outs[i] = strings.TrimRight(w.run(b.cmd), "\n")
				if !*rewrite && outs[i] != b.want {
					t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, b.cmd.line, b.raw, outs[i], b.want)
				}
			}
			if *rewrite {
				if err := writeScript(path, blocks, outs); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// world is one scenario's state.
type world struct {
	env      strategy.Env
	clock    *manualClock
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

func (w *world) run(c scriptCmd) string {
	out, err := w.exec(c)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

func (w *world) exec(c scriptCmd) (string, error) {
	if c.name != "strategy" && c.name != "replicas" && c.name != "tick" && w.s == nil {
		return "", errors.New("no strategy yet")
	}
	switch c.name {
	case "strategy":
		return w.cmdStrategy(c)
	case "replicas":
		return w.cmdReplicas(c)
	case "report":
		return w.cmdReport(c)
	case "unreport":
		r, err := w.replica(c.arg(0))
		if err != nil {
			return "", err
		}
		r.Reported, r.Metrics = false, strategy.NoMetrics
		return "ok", nil
	case "inflight":
		r, err := w.replica(c.arg(0))
		if err != nil {
			return "", err
		}
		n, err := strconv.ParseInt(c.arg(1), 10, 64)
		if err != nil {
			return "", err
		}
		r.Live.Inflight.Store(n)
		return "ok", nil
	case "tick":
		d, err := time.ParseDuration(c.arg(0))
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
	return "", fmt.Errorf("unknown command %q", c.name)
}

func (w *world) cmdStrategy(c scriptCmd) (string, error) {
	params := map[string]any{}
	for _, k := range c.order {
		var v any
		if err := json.Unmarshal([]byte(c.args[k]), &v); err != nil {
			v = c.args[k]
		}
		params[k] = v
	}
	s, err := strategy.New(c.arg(0), params, w.env)
	if err != nil {
		return "", err
	}
	w.s = s
	return "ok", nil
}

func (w *world) cmdReplicas(c scriptCmd) (string, error) {
	w.replicas = nil
	for i, spec := range c.pos {
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

func (w *world) cmdReport(c scriptCmd) (string, error) {
	r, err := w.replica(c.arg(0))
	if err != nil {
		return "", err
	}
	m := strategy.NoMetrics
	fields := map[string]*float64{
		"cpu": &m.CPU, "bw": &m.BW, "rps": &m.RPS, "utilization": &m.Utilization,
		"eps": &m.EPS, "inflight": &m.Inflight, "latency_ms": &m.LatencyMS,
	}
	for _, k := range c.order {
		dst, ok := fields[k]
		if !ok {
			return "", fmt.Errorf("unknown metric %q", k)
		}
		v, err := strconv.ParseFloat(c.args[k], 64)
		if err != nil {
			return "", err
		}
		*dst = v
	}
	r.Reported, r.Metrics = true, m
	r.Live.NoteReport(m.Inflight)
	return "ok", nil
}

func (w *world) cmdRound(c scriptCmd) (string, error) {
	p, ok := w.s.(strategy.Prober)
	if !ok {
		return "", errors.New("not a prober")
	}
	var results []strategy.ProbeResult
	for _, id := range c.order {
		for part := range strings.SplitSeq(c.args[id], ",") {
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

func (w *world) cmdLoad(c scriptCmd) (string, error) {
	p, ok := w.s.(strategy.Prober)
	if !ok {
		return "", errors.New("not a prober")
	}
	res := strategy.ProbeResult{Replica: c.arg(0), Kind: strategy.ProbeLoad, OK: c.arg(1) != "fail"}
	if res.OK {
		var err error
		if res.RIF, err = strconv.ParseFloat(c.args["rif"], 64); err != nil {
			return "", fmt.Errorf("rif: %w", err)
		}
		if res.LatencyMS, err = strconv.ParseFloat(c.args["latency"], 64); err != nil {
			return "", fmt.Errorf("latency: %w", err)
		}
	}
	if alert := p.Probed([]strategy.ProbeResult{res}, w.clock.Now()); alert != "" {
		return "alert: " + alert, nil
	}
	return "ok", nil
}

func (w *world) cmdPick(c scriptCmd) (string, error) {
	n, err := strconv.Atoi(c.args["n"])
	if err != nil {
		return "", fmt.Errorf("n: %w", err)
	}
	req := &strategy.Request{Path: c.args["path"]}
	if v, ok := c.args["cost"]; ok {
		if req.Cost, err = strconv.ParseFloat(v, 64); err != nil {
			return "", err
		}
	}
	if v, ok := c.args["size"]; ok {
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
	if c.args["seq"] == "true" {
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

// scriptCmd is one parsed command.
type scriptCmd struct {
	line  int
	name  string
	pos   []string
	args  map[string]string
	order []string
}

func (c scriptCmd) arg(i int) string {
	if i < len(c.pos) {
		return c.pos[i]
	}
	return ""
}

// scriptBlock is a command with its comments and expected output.
type scriptBlock struct {
	comments []string
	cmd      scriptCmd
	raw      string
	want     string
}

func parseScript(path string) ([]scriptBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	var blocks []scriptBlock
	var comments []string
	for {
		line, ok := next()
		if !ok {
			break
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			if len(comments) > 0 {
				comments = append(comments, "")
			}
			continue
		case strings.HasPrefix(trimmed, "#"):
			comments = append(comments, line)
			continue
		}
		for len(comments) > 0 && comments[len(comments)-1] == "" {
			comments = comments[:len(comments)-1]
		}
		b := scriptBlock{comments: comments, raw: trimmed, cmd: parseCmd(trimmed, lineNo)}
		comments = nil
		if sep, ok := next(); !ok || strings.TrimSpace(sep) != "----" {
			return nil, fmt.Errorf("%s:%d: command %q must be followed by ----", path, lineNo, trimmed)
		}
		var want []string
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			want = append(want, l)
		}
		b.want = strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	return blocks, sc.Err()
}

func parseCmd(line string, lineNo int) scriptCmd {
	fields := strings.Fields(line)
	c := scriptCmd{line: lineNo, name: fields[0], args: map[string]string{}}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.args[k] = v
			c.order = append(c.order, k)
		} else {
			c.pos = append(c.pos, f)
		}
	}
	return c
}

func writeScript(path string, blocks []scriptBlock, outs []string) error {
	var b strings.Builder
	for i, bl := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, c := range bl.comments {
			b.WriteString(c + "\n")
		}
		b.WriteString(bl.raw + "\n----\n")
		if outs[i] != "" {
			b.WriteString(outs[i] + "\n")
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
