package albl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// The albl load: the ALBL paper's httperf clients, open loop. Calls are sent at
// a fixed rate whatever the answers do; a call is answered when its whole
// object arrives within the client timeout, and counts as an error
// otherwise (the ALBL paper §5: "requests that were not serviced or delayed
// service more than 10 seconds").

// alblMaxOutstanding bounds the calls one step keeps open. At the highest
// rate (1970/s) with the 10 s timeout a step could hold 19,700; beyond
// the bound a call is not sent and counts as an error ("client limit"),
// so that a dead group cannot exhaust the machine's sockets.
const alblMaxOutstanding = 16384

// alblStep is what one open-loop step measured.
type alblStep struct {
	// Sent counts the calls sent (or refused by the client limit).
	Sent int64
	// Answered counts the calls whose whole object arrived in time; Rec
	// holds their latencies, from the intended send time.
	Answered int64
	Rec      *stats.Recorder
	// Bytes is the body bytes of the answered calls.
	Bytes int64
	// Errors counts the calls without a complete answer in time, by
	// kind (timeout, refused, status, short, client limit).
	Errors     int64
	ErrorKinds map[string]int64
	// Served counts the answered calls by the replica that served them
	// (ServedHeader; "" when absent).
	Served map[string]int64
	// Duration is the step's sending time.
	Duration time.Duration
	// SendLag is how late calls were sent after their intended time.
	SendLag *stats.Recorder
}

// ThroughputKBs is the answered bodies' KB (1024 bytes) per second of
// the step.
func (s alblStep) ThroughputKBs() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Bytes) / 1024 / s.Duration.Seconds()
}

// ErrorRate is the share of calls sent that got no complete answer in
// time (0..1).
func (s alblStep) ErrorRate() float64 {
	if s.Sent == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Sent)
}

// alblClient is an HTTP client for the open-loop load: keep-alive
// connections, many per host (an open loop needs as many as calls in
// flight), no overall timeout (each call has its own).
func alblClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// alblSchedule returns the intended send offsets of a step: rate calls/s
// evenly spaced over d, the first at 0.
func alblSchedule(rate float64, d time.Duration) []time.Duration {
	if !(rate > 0) || d <= 0 {
		return nil
	}
	n := int(rate * d.Seconds())
	out := make([]time.Duration, n)
	for k := range out {
		out[k] = time.Duration(float64(k) / rate * float64(time.Second))
	}
	return out
}

// runALBLStep sends GETs of url at rate calls/s for d, each with the
// client timeout, waits for every call to end and returns what they
// measured. want is the object's size: a shorter answer is an error.
// ctx ends the step early (what was measured is returned with ctx's
// error).
func runALBLStep(ctx context.Context, hc *http.Client, url string, want int64, rate float64, d, timeout time.Duration) (alblStep, error) {
	sched := alblSchedule(rate, d)
	res := alblStep{Rec: stats.NewRecorder(), SendLag: stats.NewRecorder(), ErrorKinds: map[string]int64{}, Served: map[string]int64{}, Duration: d}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, alblMaxOutstanding)
	fail := func(kind string) {
		mu.Lock()
		res.Errors++
		res.ErrorKinds[kind]++
		mu.Unlock()
	}
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for _, off := range sched {
		at := start.Add(off)
		if !bench.SleepUntil(ctx, timer, at) {
			break
		}
		res.Sent++
		res.SendLag.Record(time.Since(at))
		select {
		case sem <- struct{}{}:
		default:
			fail("client limit")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			served, n, err := alblCall(ctx, hc, url, want, timeout)
			took := time.Since(at)
			if err != nil {
				fail(err.Error())
				return
			}
			mu.Lock()
			res.Answered++
			res.Bytes += n
			res.Rec.Record(took)
			res.Served[served]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return res, ctx.Err()
}

// alblCall makes one call and reads the whole answer within timeout. The
// error is a short kind, for the step's tally.
func alblCall(ctx context.Context, hc *http.Client, url string, want int64, timeout time.Duration) (served string, n int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, callErrorKind(ctx, err)
	}
	n, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return "", n, callErrorKind(ctx, err)
	case resp.StatusCode != http.StatusOK:
		return "", n, fmt.Errorf("status %d", resp.StatusCode)
	case n != want:
		return "", n, errors.New("short answer")
	}
	return resp.Header.Get(bench.ServedHeader), n, nil
}

// callErrorKind names a failed call's error: "timeout" when the client
// timeout ended it, "refused" or "reset" for those, else the error.
func callErrorKind(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return errors.New("timeout")
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("refused")
	case errors.Is(err, syscall.ECONNRESET):
		return errors.New("reset")
	}
	return err
}
