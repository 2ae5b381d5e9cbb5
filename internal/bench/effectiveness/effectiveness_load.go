package effectiveness

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The effectiveness load: open-loop clients at fixed rates, each keeping
// its binding as the group's binding mode dictates.

const (
	// effPrimeN is the number every call asks about: trial division up
	// to its square root, a small real CPU cost (the TAO paper's Latency test
	// asks whether a number is prime).
	effPrimeN = 1_000_003
	// effMaxInflight bounds one client's calls in flight: an open-loop
	// client does not wait for an answer before its next call, but a
	// stalled replica must not make it open sockets without end. A call
	// that finds no slot waits for one; its latency still counts from its
	// intended send time.
	effMaxInflight = 64
	// effCallTimeout fails a call that got no answer.
	effCallTimeout = 5 * time.Second
)

// serveLog counts, per second from its start, the calls each replica
// answered (by the served_by of the answers), the calls that failed and
// the clients' binding changes, each in the second the call was meant to
// be sent. Safe for concurrent use.
type serveLog struct {
	start time.Time

	mu      sync.Mutex
	served  map[string][]int
	failed  []int
	rebinds []int
	// errors counts the failures by message, for the first
	// maxErrorKinds kinds.
	errors map[string]int
}

// maxErrorKinds bounds the distinct failure messages a serveLog keeps.
const maxErrorKinds = 8

func newServeLog(start time.Time) *serveLog {
	return &serveLog{start: start, served: map[string][]int{}, errors: map[string]int{}}
}

// second is the index of the second at, from the log's start; -1 before.
func (l *serveLog) second(at time.Time) int {
	d := at.Sub(l.start)
	if d < 0 {
		return -1
	}
	return int(d / time.Second)
}

func bump(counts []int, sec int) []int {
	for len(counts) <= sec {
		counts = append(counts, 0)
	}
	counts[sec]++
	return counts
}

func (l *serveLog) addServed(at time.Time, replica string) {
	if sec := l.second(at); sec >= 0 {
		l.mu.Lock()
		l.served[replica] = bump(l.served[replica], sec)
		l.mu.Unlock()
	}
}

func (l *serveLog) addFailed(at time.Time, err error) {
	if sec := l.second(at); sec >= 0 {
		l.mu.Lock()
		l.failed = bump(l.failed, sec)
		if msg := err.Error(); l.errors[msg] > 0 || len(l.errors) < maxErrorKinds {
			l.errors[msg]++
		}
		l.mu.Unlock()
	}
}

// errorKinds describes the failures: each message (the first few kinds)
// with its count, most frequent first.
func (l *serveLog) errorKinds() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	msgs := make([]string, 0, len(l.errors))
	for m := range l.errors {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b string) int { return cmp.Or(l.errors[b]-l.errors[a], strings.Compare(a, b)) })
	for i, m := range msgs {
		msgs[i] = fmt.Sprintf("%d× %s", l.errors[m], m)
	}
	return strings.Join(msgs, "; ")
}

func (l *serveLog) addRebind(at time.Time) {
	if sec := l.second(at); sec >= 0 {
		l.mu.Lock()
		l.rebinds = bump(l.rebinds, sec)
		l.mu.Unlock()
	}
}

// snapshot returns the first seconds whole seconds for replicas, in that
// order, and the calls served by anything not in replicas.
func (l *serveLog) snapshot(replicas []string, seconds int) (effTrace, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := func(counts []int, sec int) int {
		if sec < len(counts) {
			return counts[sec]
		}
		return 0
	}
	tr := effTrace{Replicas: replicas, Served: make([][]float64, seconds), Failed: make([]int, seconds), Rebinds: make([]int, seconds)}
	known := map[string]bool{}
	for _, id := range replicas {
		known[id] = true
	}
	for sec := range seconds {
		tr.Served[sec] = make([]float64, len(replicas))
		for i, id := range replicas {
			tr.Served[sec][i] = float64(at(l.served[id], sec))
		}
		tr.Failed[sec] = at(l.failed, sec)
		tr.Rebinds[sec] = at(l.rebinds, sec)
	}
	stray := 0
	for id, counts := range l.served {
		if !known[id] {
			for _, n := range counts {
				stray += n
			}
		}
	}
	return tr, stray
}

// callFunc makes one call and says which replica answered it.
type callFunc func(ctx context.Context) (replica string, err error)

// pacedClient is one open-loop client: it sends a call every 1/rate
// seconds on a fixed grid from its start, whether or not the earlier ones
// were answered, and measures each call's latency from its intended send
// time, so that a slow answer cannot hide the calls it delayed (no
// coordinated omission).
type pacedClient struct {
	rate float64
	call callFunc
	// bound returns the replica the client is bound to, "" when unbound;
	// nil for a client that holds no binding (per-request).
	bound func() string

	mu      sync.Mutex
	rec     *stats.Recorder // latencies from intended send times
	lastRep string

	// lag is how late each call was sent: the pacer's own timer and
	// scheduling delay, part of every latency in rec. Only run writes it.
	lag *stats.Recorder
}

// run paces calls from start until end (intended send times in [start,
// end)), logging each answer into log, and returns once every call it
// sent is over.
func (c *pacedClient) run(ctx context.Context, start, end time.Time, log *serveLog) {
	if c.rec == nil {
		c.rec = stats.NewRecorder()
	}
	if c.lag == nil {
		c.lag = stats.NewRecorder()
	}
	period := float64(time.Second) / c.rate
	slots := make(chan struct{}, effMaxInflight)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := 0; ; k++ {
		// From the start each time: no drift accumulates.
		intended := start.Add(time.Duration(float64(k) * period))
		if !intended.Before(end) {
			return
		}
		if !bench.SleepUntil(ctx, timer, intended) {
			return
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c.lag.Record(time.Since(intended))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			c.once(ctx, intended, log)
		}()
	}
}

// once makes one call intended at intended and records it. The call is
// counted in the second it was meant to be sent, whenever its answer
// came: the per-second rates then show where each second's calls went,
// unblurred by a busy machine's delays (which the latencies show).
func (c *pacedClient) once(ctx context.Context, intended time.Time, log *serveLog) {
	replica, err := c.call(ctx)
	done := time.Now()
	if ctx.Err() != nil {
		return // the run was cancelled: not a measurement
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		log.addFailed(intended, err)
	} else {
		c.rec.Record(done.Sub(intended))
		log.addServed(intended, replica)
	}
	if c.bound == nil {
		return
	}
	if now := c.bound(); now != "" {
		if c.lastRep != "" && now != c.lastRep {
			log.addRebind(intended)
		}
		c.lastRep = now
	}
}

// newEffClient returns a client of the group behind doors[0] at rate,
// speaking as binding dictates: through the client library, which keeps
// its binding and follows rebinds (on-demand, per-session), or plain HTTP
// to the front door, which forwards every call (per-request). With
// several doors (the group's front doors on a cluster's instances) the
// client library is given them all (client.Options.FrontDoors): the
// client calls doors[0] and goes through it while it answers; a
// per-request client uses doors[0] only.
func newEffClient(doors []string, binding string, rate float64) (*pacedClient, func()) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = effMaxInflight
	frontDoor := doors[0]
	url := fmt.Sprintf("%s/prime/%d", frontDoor, effPrimeN)
	c := &pacedClient{rate: rate, rec: stats.NewRecorder(), lag: stats.NewRecorder()}
	var hc *http.Client
	if binding == protocol.PerRequest {
		hc = &http.Client{Transport: base, Timeout: effCallTimeout}
	} else {
		opts := client.Options{Base: base, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if len(doors) > 1 {
			opts.FrontDoors = doors
		}
		tr := client.NewTransport(opts)
		hc = &http.Client{Transport: tr, Timeout: effCallTimeout}
		c.bound = func() string {
			b, _ := tr.Binding(frontDoor)
			return b.Replica
		}
	}
	c.call = func(ctx context.Context) (string, error) { return backend.CallPrime(ctx, hc, url) }
	return c, base.CloseIdleConnections
}

// driveClients runs clients on the experiment's schedule — the first
// effWarmup from now, each next effClientGap after the one before, all
// until dur after the first's start — and returns their log once every
// call they sent is over. sample, when not nil, is started with the log
// before the clients and its stop called after them.
func driveClients(ctx context.Context, clients []*pacedClient, dur time.Duration, sample func(*serveLog) (stop func())) *serveLog {
	start := time.Now().Add(effWarmup)
	end := start.Add(dur)
	log := newServeLog(start)
	stop := func() {}
	if sample != nil {
		stop = sample(log)
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { c.run(ctx, start.Add(time.Duration(i)*effClientGap), end, log) })
	}
	wg.Wait()
	stop()
	return log
}

// mergedRecorders returns the clients' latencies and send lags, each
// merged into one recorder.
func mergedRecorders(clients []*pacedClient) (rec, lag *stats.Recorder) {
	rec, lag = stats.NewRecorder(), stats.NewRecorder()
	for _, c := range clients {
		rec.Merge(c.rec)
		lag.Merge(c.lag)
	}
	return rec, lag
}
