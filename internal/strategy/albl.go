package strategy

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ALBLName is the registered name of the ALBL strategy.
const ALBLName = "albl"

// ALBLConfig is albl's configuration.
type ALBLConfig struct {
	// Period is how often every replica is probed and the weights are
	// recomputed (the ALBL paper §4: "metric calculation period ... given by the
	// administrator"; its experiments do not state it). Default 1s, range
	// [100ms,1h].
	Period protocol.Duration `json:"period"`
	// Object is the path of the small object whose fetch time is the HTTP
	// response time (the ALBL paper §4: "an HTTP request for a predefined
	// object"). Default "/", a path starting with "/".
	Object string `json:"object"`
	// HTTPTimeout bounds the HTTP probe; a replica that does not answer in
	// time is down for the period (the paper: "a fixed timeout interval",
	// value not given). Default 500ms, range [1ms,period].
	HTTPTimeout protocol.Duration `json:"http_timeout"`
	// DelayTimeout bounds the network delay probe (TCP connect); a replica
	// that does not complete the handshake in time is down for the period.
	// Default 25ms, the paper's ("equal to web-switch OS clock
	// granularity"), range [1ms,period].
	DelayTimeout protocol.Duration `json:"delay_timeout"`
	// Threshold tells load from congestion: when at least one replica's
	// HTTP response time is below it, weights follow equation 5, otherwise
	// equation 6 (the paper tests a low and a high value, no default).
	// Default 50ms, well above a small object's fetch on a healthy LAN.
	// Range [0,1h].
	Threshold protocol.Duration `json:"threshold"`
}

var defaultALBLConfig = ALBLConfig{
	Period:       protocol.Duration(time.Second),
	Object:       "/",
	HTTPTimeout:  protocol.Duration(500 * time.Millisecond),
	DelayTimeout: protocol.Duration(25 * time.Millisecond),
	Threshold:    protocol.Duration(50 * time.Millisecond),
}

// alblAlertEvery repeats the no-replica-up alert every so many periods
// while it lasts (after the first, at the third period).
const alblAlertEvery = 60

// alblMinProcessingShare floors equation 6's processing-time estimate
// http − ndelay at this share of http.
const alblMinProcessingShare = 0.1

// alblMinTime floors a measured time (seconds), so that a probe timed at 0
// cannot divide by zero.
const alblMinTime = 1e-6

// albl is the Anonymous Load BaLancer of the ALBL paper §4 (Kontogiannis, Valsamidis, Efraimidis and Karakos).
// Every Period the balancer probes each eligible replica twice: the HTTP
// response time http_i (fetch of Object on a fresh connection) and the
// network delay ndelay_i (TCP connect time, SYN → SYN-ACK). A replica
// whose probe fails or times out (HTTPTimeout, DelayTimeout) is removed
// for the period. From the replicas up:
//
//	if some http_i < Threshold:  x_i = 1 / (http_i · ndelay_i)                 (eq. 5)
//	else:                        x_i = 1 / (ndelay_i · (http_i − ndelay_i))    (eq. 6)
//	w_i = x_i / Σ_j x_j
//
// The paper prints the equations as fractions whose denominators are
// garbled: eq. 5's is Σ 1/http_resp_i (without ndelay) and eq. 6's names
// "delay_i" for ndelay_i. Both numerators are the per-replica terms above
// and the text says the weights are normalised ("the normalised web server
// weights 0.3, 0.5 and 0.2"), so the denominators must be the sums of
// those same terms; with the printed eq. 5 denominator the weights would
// not sum to 1. That is what is implemented. Equation 4's k (the ratio of
// the probes' object sizes) is taken as 1, as eq. 6 itself does. The
// processing estimate http_i − ndelay_i is floored at a tenth of http_i:
// the two probes are separate connections, and noise that made it zero or
// negative would hand one replica every call.
//
// Calls then go by smooth weighted round-robin over w (the stride
// scheduler of weighted-round-robin), the replicas in an order shuffled
// each period and the schedule started at a random point, "in order to
// prevent synchronised HTTP requests from receiving best or worst
// service". Before the first round the replicas' configured weights are
// used (the paper's administrator-given initial weights); a replica that
// joined since the last round counts as an average one (1/N) until it is
// probed. When no replica is up, picks fail with ErrNoReplica until the
// next round, and after three such periods in a row Probed returns an
// alert (the paper: "the administrator is notified").
//
// Weights and the shuffled order are kept under a mutex, written by Probed
// once a period and read when a picker is built; Pick itself is the
// lock-free, allocation-free stride picker.
type albl struct {
	cfg ALBLConfig
	env Env
	seq *atomic.Uint64 // the weighted round-robin position, shared by its pickers

	mu sync.Mutex
	// last is the start of the round the weights come from; zero before
	// the first round.
	last time.Time
	// order holds the last round's replicas, shuffled.
	order []string
	// weights are the normalised weights of the replicas up in the last
	// round; the others were down.
	weights map[string]float64
	// equation is 5 or 6: the one the last round used (0 when none was up).
	equation int
	// noneUp counts the rounds in a row in which no probed replica was up.
	noneUp int
}

var _ Prober = (*albl)(nil)

func init() {
	Register(Definition{
		Name:     ALBLName,
		Summary:  "ALBL (Kontogiannis et al.): weighted round-robin with weights from probed HTTP response time and TCP connect delay, reshuffled every period",
		Build:    buildALBL,
		Defaults: func() map[string]any { return ToParams(defaultALBLConfig) },
	})
}

func buildALBL(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultALBLConfig
	if err := DecodeParams(ALBLName, params, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	env = env.withDefaults()
	return &albl{cfg: cfg, env: env, seq: newSequence(env.Rand)}, nil
}

func (c *ALBLConfig) validate() error {
	const s = ALBLName
	if err := durationParamIn(s, "period", c.Period, 100*time.Millisecond, time.Hour); err != nil {
		return err
	}
	if !strings.HasPrefix(c.Object, "/") || strings.ContainsFunc(c.Object, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return &ParamError{Strategy: s, Field: "object", Value: c.Object, Allowed: `must be a path starting with "/", without spaces or control characters`}
	}
	if err := durationParamIn(s, "http_timeout", c.HTTPTimeout, time.Millisecond, c.Period.D()); err != nil {
		return err
	}
	if err := durationParamIn(s, "delay_timeout", c.DelayTimeout, time.Millisecond, c.Period.D()); err != nil {
		return err
	}
	return durationParamIn(s, "threshold", c.Threshold, 0, time.Hour)
}

func (*albl) Name() string { return ALBLName }

// Probes implements Prober: a TCP connect and a GET of the object on every
// replica, every period.
func (s *albl) Probes() ProbeSpec {
	return ProbeSpec{
		Period: s.cfg.Period.D(),
		Probes: []Probe{
			{Kind: ProbeTCPConnect, Timeout: s.cfg.DelayTimeout.D()},
			{Kind: ProbeHTTPGet, Path: s.cfg.Object, Timeout: s.cfg.HTTPTimeout.D()},
		},
	}
}

// ProbeTargets implements Prober: every eligible replica.
func (s *albl) ProbeTargets(replicas []*Replica, _ time.Time, dst []int) []int {
	for i := range replicas {
		dst = append(dst, i)
	}
	return dst
}

// alblSample is one replica's two measurements of a round, in seconds.
type alblSample struct {
	id           string
	http, ndelay float64
	haveHTTP     bool
	haveDelay    bool
}

// Probed implements Prober: it computes the next period's weights from a
// round and shuffles the order.
func (s *albl) Probed(results []ProbeResult, round time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() && !round.After(s.last) {
		return "" // an older round, overtaken
	}
	var samples []alblSample
	at := map[string]int{}
	failed := map[string]bool{}
	for _, r := range results {
		i, seen := at[r.Replica]
		if !seen {
			i = len(samples)
			at[r.Replica] = i
			samples = append(samples, alblSample{id: r.Replica})
		}
		if !r.OK {
			failed[r.Replica] = true
			continue
		}
		t := max(r.Took.Seconds(), alblMinTime)
		switch r.Kind {
		case ProbeHTTPGet:
			samples[i].http, samples[i].haveHTTP = t, true
		case ProbeTCPConnect:
			samples[i].ndelay, samples[i].haveDelay = t, true
		}
	}
	if len(samples) == 0 {
		return "" // nothing to probe: no verdict
	}
	s.last = round
	up := samples[:0:0]
	for _, smp := range samples {
		if !failed[smp.id] && smp.haveHTTP && smp.haveDelay {
			up = append(up, smp)
		}
	}
	s.weights, s.equation = alblWeights(up, s.cfg.Threshold.D().Seconds())
	s.order = s.order[:0]
	for _, smp := range samples {
		s.order = append(s.order, smp.id)
	}
	for i := len(s.order) - 1; i > 0; i-- {
		j := s.env.Rand.IntN(i + 1)
		s.order[i], s.order[j] = s.order[j], s.order[i]
	}
	if len(up) > 0 {
		s.noneUp = 0
		return ""
	}
	s.noneUp++
	if s.noneUp >= 3 && (s.noneUp-3)%alblAlertEvery == 0 {
		return fmt.Sprintf("%s: no replica up for %d periods", ALBLName, s.noneUp)
	}
	return ""
}

// alblWeights computes equation 5 or 6 over the replicas up, normalised,
// and says which equation it used (0 when none is up).
func alblWeights(up []alblSample, threshold float64) (map[string]float64, int) {
	w := make(map[string]float64, len(up))
	if len(up) == 0 {
		return w, 0
	}
	eq := 6
	for _, smp := range up {
		if smp.http < threshold {
			eq = 5
			break
		}
	}
	var sum float64
	for _, smp := range up {
		var x float64
		if eq == 5 {
			x = 1 / (smp.http * smp.ndelay)
		} else {
			x = 1 / (smp.ndelay * max(smp.http-smp.ndelay, alblMinProcessingShare*smp.http))
		}
		w[smp.id] = x
		sum += x
	}
	for id := range w {
		w[id] /= sum
	}
	return w, eq
}

// Picker builds the weighted round-robin over the replicas up in the last
// round, in its shuffled order.
func (s *albl) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.IsZero() {
		weights := make([]float64, len(replicas))
		for i, r := range replicas {
			weights[i] = weightOf(r)
		}
		return newStridePicker(replicas, weights, s.seq)
	}
	byID := make(map[string]*Replica, len(replicas))
	for _, r := range replicas {
		byID[r.ID] = r
	}
	var (
		list    []*Replica
		weights []float64
		probed  = make(map[string]bool, len(s.order))
	)
	for _, id := range s.order {
		probed[id] = true
		if r, w := byID[id], s.weights[id]; r != nil && w > 0 {
			list = append(list, r)
			weights = append(weights, w)
		}
	}
	average := 1.0
	if len(s.weights) > 0 {
		average = 1 / float64(len(s.weights))
	}
	for _, r := range replicas {
		if !probed[r.ID] {
			list = append(list, r)
			weights = append(weights, average)
		}
	}
	return newStridePicker(list, weights, s.seq)
}

// alblWeightsOf returns the weights of the last round and the equation it
// used (5 or 6; 0 when no replica was up or before the first round), for
// tests. The map is a copy.
func alblWeightsOf(s Strategy) (map[string]float64, int) {
	a, ok := s.(*albl)
	if !ok {
		return nil, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]float64, len(a.weights))
	for id, w := range a.weights {
		out[id] = w
	}
	return out, a.equation
}
