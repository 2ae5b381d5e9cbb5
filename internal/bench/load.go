package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// Endpoint is what a closed-loop caller calls.
type Endpoint struct {
	// URL is the whole URL called: a replica's, a front door's or a
	// competitor's base URL and the path.
	URL string
	// Method defaults to GET.
	Method string
	// Body is sent with every call (POST /echo); an answer must then
	// be as long as the body.
	Body []byte
	// Binding makes the calls through fulcrum's client library, which
	// follows the binding protocol: the first call goes through the
	// front door, later ones straight to the bound replica.
	Binding bool
	// GIOP, when set, makes the calls over GIOP with fulcrum's client
	// ORB instead of HTTP (URL, Method, Body and Binding unused).
	GIOP *GIOPCall
	// TLS is the client's TLS configuration for https:// URLs (nil: Go's
	// defaults).
	TLS *tls.Config
}

// LoadResult is what a closed-loop run measured.
type LoadResult struct {
	// Rec holds the latencies of the calls that succeeded.
	Rec *stats.Recorder
	// Errors counts calls that failed; FirstError is the first one.
	Errors     int64
	FirstError string
	// Elapsed is from the synchronised start to the end of the last
	// call.
	Elapsed time.Duration
}

// Figures summarises the run.
func (l LoadResult) Figures() Figures { return FiguresOf(l) }

// merge adds o to l: latencies and errors add up, and l lasts as long as
// the longer of the two (they started together).
func (l *LoadResult) merge(o LoadResult) {
	if l.Rec == nil {
		l.Rec = stats.NewRecorder()
	}
	l.Rec.Merge(o.Rec)
	l.Errors += o.Errors
	if l.FirstError == "" {
		l.FirstError = o.FirstError
	}
	l.Elapsed = max(l.Elapsed, o.Elapsed)
}

// Callers are closed-loop callers of one target, each with an HTTP client
// of its own (keep-alive, so one connection each), kept between runs so
// that rounds of an experiment reuse their connections and bindings. Not
// safe for concurrent use.
type Callers struct {
	target Endpoint
	list   []*caller
}

type caller struct {
	target Endpoint
	hc     *http.Client
	base   *http.Transport
	giop   *giopCaller // GIOP calls; nil over HTTP
}

// NewCallers returns n callers of target. Close them when done.
func NewCallers(target Endpoint, n int) *Callers {
	if target.Method == "" {
		target.Method = http.MethodGet
	}
	cs := &Callers{target: target}
	for range n {
		if target.GIOP != nil {
			g, err := newGIOPCaller(*target.GIOP)
			if err != nil {
				g = &giopCaller{err: err}
			}
			cs.list = append(cs.list, &caller{target: target, giop: g})
			continue
		}
		base := &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        4,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
		if target.TLS != nil {
			base.TLSClientConfig = target.TLS.Clone()
		}
		// Every call is bounded by callTimeout: by the Client over
		// net/http's own Transport (a context deadline), and by the client
		// library's own Timeout over it, which costs the same, since
		// net/http enforces a Client.Timeout through any other
		// RoundTripper with two goroutines and a timer per call.
		var rt http.RoundTripper = base
		timeout := callTimeout
		if target.Binding {
			rt = client.NewTransport(client.Options{Base: base, Logger: slog.New(slog.DiscardHandler), Timeout: callTimeout})
			timeout = 0
		}
		hc := &http.Client{
			Transport: rt,
			Timeout:   timeout,
			// A redirect is an answer here: the client library follows
			// the binding protocol's own.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		cs.list = append(cs.list, &caller{target: target, hc: hc, base: base})
	}
	return cs
}

// Len is the number of callers.
func (cs *Callers) Len() int { return len(cs.list) }

// Close closes the callers' idle connections.
func (cs *Callers) Close() {
	for _, c := range cs.list {
		if c.giop != nil {
			c.giop.close()
			continue
		}
		c.base.CloseIdleConnections()
	}
}

// Warm makes n unrecorded calls with every caller, concurrently: it
// opens the connections (and, with Binding, binds the callers) before
// anything is measured. It fails when a caller's last warm-up call fails.
func (cs *Callers) Warm(ctx context.Context, n int) error {
	errs := make([]error, len(cs.list))
	var wg sync.WaitGroup
	for i, c := range cs.list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				errs[i] = c.call(ctx)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("bench: warm-up call to %s: %w", cs.target.name(), err)
		}
	}
	return nil
}

// Run runs the callers in a closed loop with no think time from start:
// each makes its share of calls (calls split evenly) or, when calls is 0,
// calls until until passes. start is the synchronised start: every caller
// is ready when it comes (a zero start means now). ctx ends the run early
// (the result then holds what was measured and ctx's error is returned).
func (cs *Callers) Run(ctx context.Context, start time.Time, calls int, until time.Time) (LoadResult, error) {
	if calls <= 0 && until.IsZero() {
		return LoadResult{}, errors.New("bench: a load needs a number of calls or an end")
	}
	type out struct {
		rec    *stats.Recorder
		errs   int64
		first  string
		finish time.Time
	}
	outs := make([]out, len(cs.list))
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	for i, c := range cs.list {
		share := 0
		if calls > 0 {
			share = calls / len(cs.list)
			if i < calls%len(cs.list) {
				share++
			}
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			o := out{rec: stats.NewRecorder()}
			ready.Done()
			<-gate
			for n := 0; ; n++ {
				if calls > 0 && n >= share {
					break
				}
				if calls <= 0 && !time.Now().Before(until) {
					break
				}
				if ctx.Err() != nil {
					break
				}
				t0 := time.Now()
				err := c.call(ctx)
				d := time.Since(t0)
				switch {
				case err == nil:
					o.rec.Record(d)
				case ctx.Err() == nil:
					o.errs++
					if o.first == "" {
						o.first = err.Error()
					}
				}
			}
			o.finish = time.Now()
			outs[i] = o
		}()
	}
	ready.Wait() // every goroutine is parked at the gate
	if wait := time.Until(start); !start.IsZero() && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	began := time.Now()
	close(gate)
	done.Wait()
	res := LoadResult{Rec: stats.NewRecorder()}
	for _, o := range outs {
		res.merge(LoadResult{Rec: o.rec, Errors: o.errs, FirstError: o.first, Elapsed: o.finish.Sub(began)})
	}
	return res, ctx.Err()
}

// RunLoad makes callers of target, warms them up, runs them for calls
// calls (or, when calls is 0, for d) and closes them.
func RunLoad(ctx context.Context, target Endpoint, callers, calls int, d time.Duration) (LoadResult, error) {
	cs := NewCallers(target, callers)
	defer cs.Close()
	if err := cs.Warm(ctx, warmupCalls); err != nil {
		return LoadResult{}, err
	}
	var until time.Time
	if calls <= 0 {
		until = time.Now().Add(d)
	}
	return cs.Run(ctx, time.Time{}, calls, until)
}

// callTimeout bounds each call of a closed-loop caller.
const callTimeout = 60 * time.Second

// warmupCalls is how many unrecorded calls each caller makes first.
const warmupCalls = 3

// call makes one call and reads the whole answer.
func (c *caller) call(ctx context.Context) error {
	if c.giop != nil {
		return c.giop.call(ctx)
	}
	var body io.Reader
	if c.target.Body != nil {
		body = bytes.NewReader(c.target.Body)
	}
	req, err := http.NewRequestWithContext(ctx, c.target.Method, c.target.URL, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	if c.target.Body != nil && n != int64(len(c.target.Body)) {
		return fmt.Errorf("answer of %d bytes to a body of %d", n, len(c.target.Body))
	}
	return nil
}

// Payload returns n bytes of a repeating printable pattern.
func Payload(n int) []byte {
	const pattern = "fulcrum-bench-payload-24"
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern[i%len(pattern)]
	}
	return b
}

// SleepUntil waits on timer until at, at once if at has passed; it
// returns false when ctx ended first. The open-loop pacers share one timer
// per sender (Reset on a fired or stopped timer is safe since Go 1.23).
func SleepUntil(ctx context.Context, timer *time.Timer, at time.Time) bool {
	if wait := time.Until(at); wait > 0 {
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
	}
	return ctx.Err() == nil
}
