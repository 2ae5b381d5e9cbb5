package replagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// SourcedEvent is one event of the log stream and the admin API base URL
// of the instance that sent it (where replies to entries without a
// reply_to go).
type SourcedEvent struct {
	Event    protocol.LogEvent
	Instance string
}

// LogSource streams the group's log.
type LogSource interface {
	// Stream sends the log's events from position from on to out, in
	// order, until ctx ends (it returns nil) or it cannot go on (an
	// error: the agent stops). Across reconnections it resumes after the
	// last entry it sent.
	Stream(ctx context.Context, from uint64, out chan<- SourcedEvent) error
}

// Defaults of HTTPSource.
const (
	// DefaultMaxPayload is the group's default max_payload.
	DefaultMaxPayload = 1 << 20
	// lineSlack is what a stream line may hold beyond an entry's payload
	// (the event's own fields).
	lineSlack = 64 << 10
	// DefaultIdleTimeout is how long a stream may send nothing (the
	// balancer sends a heartbeat every second) before the agent takes it
	// for dead and reconnects.
	DefaultIdleTimeout = 10 * time.Second
	firstRetry         = 100 * time.Millisecond
	maxRetry           = 5 * time.Second
)

// HTTPSource streams the log from the balancer's admin API, GET
// {admin}/v1/groups/{group}/log?from=P (NDJSON of protocol.LogEvent) with
// the replica's token, reconnecting with backoff and failing over across
// its admin URLs. An error event with code "closed" (the instance is
// shutting down) is taken as the end of the connection: the stream goes
// on at another instance; so is one with code "unavailable" (the
// instance's log cannot be read for now).
type HTTPSource struct {
	// Admins are the admin API base URLs (one or each instance of a
	// cluster), tried in turn.
	Admins []string
	// Group is the group's name.
	Group string
	// Token returns the replica's token, false while it has none.
	Token func() (string, bool)
	// Client makes the requests; it must have no overall timeout (a
	// stream lasts). Default: a client of its own.
	Client *http.Client
	// MaxPayload is the group's max_payload (at least), default
	// DefaultMaxPayload: a stream line may hold it plus 64 KiB.
	MaxPayload int
	// IdleTimeout, default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Clock defaults to the real one; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

// transientCodes are the codes of error events that end one instance's
// stream but not the agent: the instance is closing, or its log is not
// reachable for now. The stream goes on, at the next instance.
var transientCodes = map[string]bool{"closed": true, "unavailable": true}

// errNoProgress marks a connection that ended before its hello.
var errNoProgress = errors.New("replagent: the log stream ended before its first line")

// Stream implements LogSource.
func (s *HTTPSource) Stream(ctx context.Context, from uint64, out chan<- SourcedEvent) error {
	if len(s.Admins) == 0 {
		return errors.New("replagent: no admin URL to stream the log from")
	}
	clk, log := clock.Or(s.Clock), s.Logger
	if log == nil {
		log = slog.Default()
	}
	next, i, retry, failing := from, 0, firstRetry, false
	for {
		base := s.Admins[i]
		progressed, err := s.once(ctx, base, &next, out)
		if ctx.Err() != nil {
			return nil
		}
		var fatal *fatalStreamError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if progressed {
			retry = firstRetry
			if failing {
				log.Info("log stream back", "admin", base)
				failing = false
			}
		} else {
			i = (i + 1) % len(s.Admins)
		}
		if !failing || progressed {
			log.Warn("log stream interrupted; reconnecting", "admin", base, "from", next, "err", err)
			failing = !progressed
		}
		wait := retry/2 + rand.N(retry/2+1)
		t := clk.NewTicker(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
			t.Stop()
		}
		if !progressed {
			retry = min(2*retry, maxRetry)
		}
	}
}

// fatalStreamError is a stream the agent cannot go on with.
type fatalStreamError struct{ err error }

func (e *fatalStreamError) Error() string { return e.err.Error() }

// once streams from one instance until the connection ends, advancing
// *next past each entry it sent. progressed reports whether the stream got
// as far as its first line.
func (s *HTTPSource) once(ctx context.Context, base string, next *uint64, out chan<- SourcedEvent) (progressed bool, err error) {
	tok, ok := s.Token()
	if !ok {
		return false, errors.New("replagent: not registered yet")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := base + "/v1/groups/" + url.PathEscape(s.Group) + "/log?from=" + strconv.FormatUint(*next, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, &fatalStreamError{fmt.Errorf("replagent: log stream: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/x-ndjson")
	hc := s.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("replagent: GET %s answered %d: %s", u, resp.StatusCode, excerpt(resp.Body))
	}
	var lastRead atomic.Int64
	clk := clock.Or(s.Clock)
	lastRead.Store(clk.Now().UnixNano())
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	idleTick := clk.NewTicker(idle / 4) // made here: it ticks from the connection's start
	go watchIdle(ctx, cancel, idleTick, &lastRead, idle)
	maxPayload := s.MaxPayload
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	lines := lineReader{r: bufio.NewReaderSize(resp.Body, 64<<10), max: maxPayload + lineSlack}
	for {
		line, err := lines.next()
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				return progressed, &fatalStreamError{fmt.Errorf("replagent: the log stream from %s sent a line after position %d longer than %d bytes (--max-payload %d plus 64 KiB): raise --max-payload to the group's replicated.max_payload", base, *next-1, lines.max, maxPayload)}
			}
			if err == io.EOF && !progressed {
				err = errNoProgress
			}
			return progressed, err
		}
		lastRead.Store(clk.Now().UnixNano())
		var ev protocol.LogEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return progressed, &fatalStreamError{fmt.Errorf("replagent: the log stream from %s sent a line after position %d that is not a log event (%w); the replica stops rather than skip an entry", base, *next-1, err)}
		}
		progressed = true
		if ev.Type == protocol.LogEventError && transientCodes[ev.Code] {
			return true, fmt.Errorf("replagent: the instance at %s ended the log stream (%s): %s", base, ev.Code, ev.Message)
		}
		select {
		case out <- SourcedEvent{Event: ev, Instance: base}:
		case <-ctx.Done():
			return progressed, ctx.Err()
		}
		if ev.Type == protocol.LogEventEntry && ev.Position >= *next {
			*next = ev.Position + 1
		}
	}
}

// watchIdle cancels the stream when it has read nothing for idle, looking
// at every tick of t, and stops t.
func watchIdle(ctx context.Context, cancel context.CancelFunc, t clock.Ticker, lastRead *atomic.Int64, idle time.Duration) {
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C():
			if now.Sub(time.Unix(0, lastRead.Load())) >= idle {
				cancel()
				return
			}
		}
	}
}

// errLineTooLong is a stream line above the reader's bound.
var errLineTooLong = errors.New("replagent: log stream line too long")

// lineReader reads newline-terminated lines of at most max bytes. A last
// line without its newline is a connection cut short: io.ErrUnexpectedEOF.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// next returns the next non-empty line without its newline, valid until
// the next call.
func (l *lineReader) next() ([]byte, error) {
	for {
		l.buf = l.buf[:0]
		for {
			chunk, err := l.r.ReadSlice('\n')
			if len(l.buf)+len(chunk) > l.max+1 {
				return nil, errLineTooLong
			}
			l.buf = append(l.buf, chunk...)
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF && len(l.buf) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line := bytes.TrimSpace(l.buf)
		if len(line) > 0 {
			return line, nil
		}
	}
}
