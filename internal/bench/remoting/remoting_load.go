package remoting

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The remoting load (the .NET Remoting paper §V): each client calls getPrimeCount(X),
// here GET /count/{X}, with X = ⌊−ln(U)·xMean⌋ and exponential gaps
// ⌊−ln(U)·gapMean⌋ between its calls, as the paper's
// floor(−log(rand(0,1))·multiplier) draws both.

// remotingCall is one call of a client's sample: its X and the gap
// before it.
type remotingCall struct {
	X   int
	Gap time.Duration
}

// remotingSample draws a client's calls: n (X, gap) pairs from a source
// seeded with seed, so that every strategy is measured on the same
// sample (the paper reused its three X–Y samples for every mechanism).
func remotingSample(seed uint64, n int, xMean float64, gapMean time.Duration) []remotingCall {
	rng := rand.New(rand.NewPCG(seed, 0x72656d6f74696e67)) // "remoting"
	calls := make([]remotingCall, n)
	for i := range calls {
		calls[i] = remotingCall{
			X:   int(math.Floor(expDraw(rng) * xMean)),
			Gap: time.Duration(math.Floor(expDraw(rng) * float64(gapMean))),
		}
	}
	return calls
}

// expDraw is −ln(U), U uniform in (0, 1]: an exponential draw of mean 1.
func expDraw(rng *rand.Rand) float64 { return -math.Log(1 - rng.Float64()) }

// remotingResult is what one sample measured.
type remotingResult struct {
	// Rec holds the latencies of the answered calls, from their intended
	// send times.
	Rec *stats.Recorder
	// XSum adds up the X of the answered calls (their work: CPU per
	// unit of X is what sets the load; remoting_cpu.go).
	XSum int64
	// Errors counts the calls without an answer; FirstError is one.
	Errors     int64
	FirstError string
	// SendLag is how late calls were sent after their intended time.
	SendLag *stats.Recorder
	// Elapsed is from the start to the last answer.
	Elapsed time.Duration
}

const (
	// remotingMaxInflight bounds the calls one sample keeps open, so that
	// a stalled group cannot exhaust the machine's sockets; a call that
	// finds no slot waits for one, its latency still counted from its
	// intended send time.
	remotingMaxInflight = 2048
	// remotingCallTimeout fails a call with no answer.
	remotingCallTimeout = 30 * time.Second
)

// remotingHTTP returns the client of a sample: keep-alive connections,
// as many per host as calls in flight.
func remotingHTTP() (*http.Client, func()) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        remotingMaxInflight,
		MaxIdleConnsPerHost: remotingMaxInflight,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: remotingCallTimeout}, tr.CloseIdleConnections
}

// callCount makes one GET /count/{x} call to base and reads the answer.
// The Fulcrum-Cost header gives the call's CPU cost as x (the sieve's
// work is proportional to it), for cost-aware strategies (ett).
func callCount(ctx context.Context, hc *http.Client, base string, x int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/count/"+strconv.Itoa(x), nil)
	if err != nil {
		return err
	}
	req.Header.Set(protocol.HeaderCost, "cpu="+strconv.Itoa(x))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// runRemotingSample runs one sample: every client sends its calls to
// base open-loop — call i at start + the sum of the gaps up to i, whether
// or not the earlier ones were answered — and the sample ends when every
// call is over. Latencies count from the intended send time, so that a
// slow answer cannot hide the calls it delayed.
func runRemotingSample(ctx context.Context, hc *http.Client, base string, clients [][]remotingCall, start time.Time) remotingResult {
	res := remotingResult{Rec: stats.NewRecorder(), SendLag: stats.NewRecorder()}
	var mu sync.Mutex
	slots := make(chan struct{}, remotingMaxInflight)
	var calls sync.WaitGroup
	var senders sync.WaitGroup
	for _, sample := range clients {
		senders.Add(1)
		go func() {
			defer senders.Done()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			at := start
			for _, c := range sample {
				at = at.Add(c.Gap)
				if !bench.SleepUntil(ctx, timer, at) {
					return
				}
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				intended := at
				mu.Lock()
				res.SendLag.Record(time.Since(intended))
				mu.Unlock()
				calls.Add(1)
				go func() {
					defer calls.Done()
					defer func() { <-slots }()
					err := callCount(ctx, hc, base, c.X)
					d := time.Since(intended)
					if ctx.Err() != nil {
						return // cancelled: not a measurement
					}
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						res.Errors++
						if res.FirstError == "" {
							res.FirstError = err.Error()
						}
						return
					}
					res.Rec.Record(d)
					res.XSum += int64(c.X)
				}()
			}
		}()
	}
	senders.Wait()
	calls.Wait()
	res.Elapsed = time.Since(start)
	return res
}

// remotingCapacity is one measurement of the replicas saturated directly:
// the calls answered, the sum of their X, the calls that failed, and the
// time from the first call to the last answer.
type remotingCapacity struct {
	Calls, XSum, Failed int64
	Elapsed             time.Duration
	// ReplicaXSum is the sum of the answered X of each replica.
	ReplicaXSum []int64
}

// rps is the calls answered per second (the group's capacity in calls).
func (c remotingCapacity) rps() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Calls) / c.Elapsed.Seconds()
}

// xPerSec is the X answered per second: the group's capacity in units of
// work, which does not carry the sample's own mean X as rps does.
func (c remotingCapacity) xPerSec() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.XSum) / c.Elapsed.Seconds()
}

// measureCapacity saturates the replicas directly (no balancer):
// callersPer closed-loop callers per replica, each calling with the
// sample's X distribution for d, the draws of caller j of replica i from
// seed (seed+i, j). It returns what was answered until the last answer.
func measureCapacity(ctx context.Context, bases []string, callersPer int, xMean float64, d time.Duration, seed uint64) (remotingCapacity, error) {
	hc, closeIdle := remotingHTTP()
	defer closeIdle()
	c := remotingCapacity{ReplicaXSum: make([]int64, len(bases))}
	var mu sync.Mutex
	var firstErr error
	end := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i, base := range bases {
		for j := range callersPer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed+uint64(i), uint64(j)))
				var n, f, xs int64
				for time.Now().Before(end) && ctx.Err() == nil {
					x := int(expDraw(rng) * xMean)
					if err := callCount(ctx, hc, base, x); err != nil {
						f++
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						continue
					}
					n++
					xs += int64(x)
				}
				mu.Lock()
				c.Calls += n
				c.XSum += xs
				c.ReplicaXSum[i] += xs
				c.Failed += f
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	c.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return c, err
	}
	if c.Calls == 0 {
		return c, fmt.Errorf("bench: remoting: no call answered while measuring capacity (%v)", firstErr)
	}
	return c, nil
}

// loneCalls is what measureServiceTime found of one replica's lone
// calls.
type loneCalls struct {
	// Wall is the response time of a lone call of mean X.
	Wall time.Duration
	// CPU is the least-squares line of the replica's CPU time per call
	// (ns) on X: its intercept is the work every call does whatever its
	// X. Zero without a CPU reader.
	CPU stats.Line
}

// measureServiceTime makes n calls one after another to base and returns
// the service time of a lone call of mean size xMean: the least-squares
// line of latency on X through the n calls, at xMean. The calls draw their
// X from a fixed seed, so that every group size times the same calls; a
// plain mean of their latencies would carry that sample's own mean X (n
// exponential draws stray by about 1/√n, 16% above xMean for the 200 of a
// full run) into every group's figure. With usage (the replica's CPU time
// so far) it also fits the replica's CPU time per call on X.
func measureServiceTime(ctx context.Context, base string, n int, xMean float64, usage func() (time.Duration, error)) (loneCalls, error) {
	hc, closeIdle := remotingHTTP()
	defer closeIdle()
	rng := rand.New(rand.NewPCG(1, 2))
	xs, lat, cpu := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	for range n {
		x := int(expDraw(rng) * xMean)
		var u0 time.Duration
		if usage != nil {
			var err error
			if u0, err = usage(); err != nil {
				return loneCalls{}, err
			}
		}
		t0 := time.Now()
		if err := callCount(ctx, hc, base, x); err != nil {
			return loneCalls{}, fmt.Errorf("bench: remoting: measuring the service time: %w", err)
		}
		xs, lat = append(xs, float64(x)), append(lat, float64(time.Since(t0)))
		if usage != nil {
			u1, err := usage()
			if err != nil {
				return loneCalls{}, err
			}
			cpu = append(cpu, float64(u1-u0))
		}
	}
	line, err := stats.FitLine(xs, lat)
	if err != nil {
		return loneCalls{}, fmt.Errorf("bench: remoting: measuring the service time: %w", err)
	}
	out := loneCalls{Wall: time.Duration(line.At(xMean))}
	if usage != nil {
		if out.CPU, err = stats.FitLine(xs, cpu); err != nil {
			return loneCalls{}, fmt.Errorf("bench: remoting: measuring the CPU time per call: %w", err)
		}
	}
	return out, nil
}

// measureServiceTimes measures every replica's lone calls
// (measureServiceTime, n calls to each, usage[i] replica i's CPU time or
// nil) at once: one caller per replica, and the replicas' quotas together
// stay below the machine's cores, so that the callers do not slow one
// another down.
func measureServiceTimes(ctx context.Context, bases []string, n int, xMean float64, usage []func() (time.Duration, error)) ([]loneCalls, error) {
	out := make([]loneCalls, len(bases))
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		var u func() (time.Duration, error)
		if i < len(usage) {
			u = usage[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = measureServiceTime(ctx, base, n, xMean, u)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i+1, err)
		}
	}
	return out, nil
}

// remotingCheckXs are the X whose counts checkCountAnswers checks: the
// edges of the sieve (below 2, the first prime, a prime itself) and a few
// sizes.
var remotingCheckXs = []int{0, 2, 3, 100, 7919, 30_000, 1_000_003}

// checkCountAnswers checks that the replica at base answers GET
// /count/{X} with the number of primes below X, so that a run never
// measures a replica that answers quickly but wrongly.
func checkCountAnswers(ctx context.Context, base string) error {
	hc, closeIdle := remotingHTTP()
	defer closeIdle()
	for _, x := range remotingCheckXs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/count/"+strconv.Itoa(x), nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("bench: remoting: checking %s/count/%d: %w", base, x, err)
		}
		var got struct {
			X     *int `json:"x"`
			Count *int `json:"count"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&got)
		resp.Body.Close()
		switch want := backend.PrimeCount(x); {
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("bench: remoting: %s/count/%d answered %s", base, x, resp.Status)
		case err != nil:
			return fmt.Errorf("bench: remoting: %s/count/%d: the answer is not JSON: %w", base, x, err)
		case got.X == nil || got.Count == nil || *got.X != x || *got.Count != want:
			return fmt.Errorf("bench: remoting: %s/count/%d answered x %v, count %v; want x %d, count %d", base, x, deref(got.X), deref(got.Count), x, want)
		}
	}
	return nil
}

// deref is *p, or "none" for nil.
func deref(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}
