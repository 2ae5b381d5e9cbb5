package replication

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Kinds of client.
const (
	// plain clients send nothing of fulcrum's: the bridge takes their
	// connection as the session.
	plain = "plain"
	// aware clients send Fulcrum-Session and a fresh Fulcrum-Sequence.
	aware = "aware"
)

// sample is one measured call.
type sample struct {
	rtt time.Duration
	// appendDur and wait are the bridge's Server-Timing (replicated
	// calls only; 0 elsewhere).
	appendDur, wait time.Duration
	value           int64
}

// clientRun is what one closed-loop client measured.
type clientRun struct {
	samples []sample
	// errors are calls that failed (a transport error or a status other
	// than 200); every call is still counted in calls.
	errors []string
	calls  int
}

// caller makes closed-loop POST /increment calls on one connection.
type caller struct {
	url     string
	kind    string
	session string
	seq     atomic.Uint64
	hc      *http.Client
}

func newCaller(url, kind, session string) *caller {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}
	return &caller{url: url, kind: kind, session: session, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *caller) close() { c.hc.CloseIdleConnections() }

// call makes one call. A protocol-aware client sends the same session and
// sequence again after a transport error (up to tries times): the bridge
// deduplicates it.
func (c *caller) call(ctx context.Context, tries int) (sample, error) {
	seq := c.seq.Add(1)
	var err error
	for range max(tries, 1) {
		var s sample
		s, err = c.once(ctx, seq)
		if err == nil || c.kind != aware || ctx.Err() != nil {
			return s, err
		}
		var se *statusError
		if asStatus(err, &se) {
			return s, err
		}
	}
	return sample{}, err
}

// statusError is a reply other than 200.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.status, e.body) }

func asStatus(err error, target **statusError) bool {
	se, ok := err.(*statusError)
	if ok {
		*target = se
	}
	return ok
}

func (c *caller) once(ctx context.Context, seq uint64) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/increment", nil)
	if err != nil {
		return sample{}, err
	}
	if c.kind == aware {
		req.Header.Set(protocol.HeaderSession, c.session)
		req.Header.Set(protocol.HeaderSequence, strconv.FormatUint(seq, 10))
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return sample{}, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil {
		return sample{}, err
	}
	s := sample{rtt: time.Since(start)}
	if resp.StatusCode != http.StatusOK {
		return s, &statusError{status: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	var v struct {
		Value int64 `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return s, fmt.Errorf("reply %q: %w", body, err)
	}
	s.value = v.Value
	s.appendDur, s.wait = serverTiming(resp.Header.Get("Server-Timing"))
	return s, nil
}

// serverTiming reads the bridge's "append;dur=<ms>, wait;dur=<ms>".
func serverTiming(h string) (appendDur, wait time.Duration) {
	for part := range strings.SplitSeq(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if k != "dur" {
				continue
			}
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			d := time.Duration(ms * float64(time.Millisecond))
			switch name {
			case "append":
				appendDur = d
			case "wait":
				wait = d
			}
		}
	}
	return appendDur, wait
}

// runClients runs n closed-loop clients of kind against url, each making
// calls calls, or, when until is not zero, as many as they start before
// it (a call started is always finished).
func runClients(ctx context.Context, url, kind string, n, calls int, until time.Time, tag string) []clientRun {
	out := make([]clientRun, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := newCaller(url, kind, fmt.Sprintf("bench-%s-%d", tag, i))
			defer c.close()
			r := &out[i]
			for range calls {
				if ctx.Err() != nil || (!until.IsZero() && !time.Now().Before(until)) {
					return
				}
				r.calls++
				s, err := c.call(ctx, 3)
				if err != nil {
					r.errors = append(r.errors, err.Error())
					continue
				}
				r.samples = append(r.samples, s)
			}
		})
	}
	wg.Wait()
	return out
}
