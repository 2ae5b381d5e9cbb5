package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/eft"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of Options.
const (
	// DefaultMaxRunning bounds the work-flows running at once.
	DefaultMaxRunning = 32
	// DefaultKeep is how long a finished work-flow's status is kept.
	DefaultKeep = time.Hour
	// DefaultMaxKept bounds the finished work-flows kept; beyond it the
	// oldest finished are forgotten first.
	DefaultMaxKept = 1000
)

// Errors of the Executor.
var (
	ErrUnknown   = errors.New("workflow: unknown work-flow")
	ErrBusy      = errors.New("workflow: too many work-flows running")
	ErrClosed    = errors.New("workflow: shutting down")
	ErrNoReplica = errors.New("workflow: the group has no active replica")
)

// Options configure an Executor.
type Options struct {
	// Clock reads the time of starts, finishes and the scheduler's
	// decisions; the system clock when nil.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// MaxRunning bounds the work-flows running at once (ErrBusy beyond);
	// DefaultMaxRunning when 0.
	MaxRunning int
	// Keep is how long a finished work-flow stays visible; DefaultKeep
	// when 0.
	Keep time.Duration
	// MaxKept bounds the finished work-flows kept; DefaultMaxKept when 0.
	MaxKept int
}

// Replica is a server of a work-flow.
type Replica struct {
	// ID is the replica's id, shown in the status.
	ID string
	// URL is the replica's base URL; a task's path is appended to it.
	URL *url.URL
}

// Target is where a work-flow runs: a group's replicas at submission and
// how to reach them.
type Target struct {
	// Group is the group's name.
	Group string
	// Replicas are the servers, in the order the scheduler numbers them.
	Replicas []Replica
	// Parallel is k: at most this many of the work-flow's tasks run on a
	// replica at once (≥ 1).
	Parallel int
	// Transport sends the calls; its idle connections are closed when
	// the work-flow ends (when it has CloseIdleConnections). Redirects
	// are not followed: a 3xx answer is the task's status.
	Transport http.RoundTripper
	// CallTimeout bounds each call (the group's timeouts.request).
	CallTimeout time.Duration
	// Alive reports whether a replica (by id) may still take calls; a
	// task whose replica is gone when it is about to start is placed
	// again (stateless) or fails (stateful). Nil: every replica is.
	Alive func(id string) bool
	// Estimate prices a task without cost_ms: milliseconds of a call to
	// the path (without its query).
	Estimate func(path string) float64
}

// Executor runs work-flows: one goroutine per running work-flow, which
// drives its scheduler (eft.Core, or roundRobin) and starts a goroutine
// per call. Safe for concurrent use.
type Executor struct {
	opts   Options
	clock  clock.Clock
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	runs    map[string]*run // by id
	order   []*run          // by submission
	running int
	closed  bool
}

// New returns an Executor. Close it to stop its work-flows.
func New(opts Options) *Executor {
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.MaxKept <= 0 {
		opts.MaxKept = DefaultMaxKept
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Executor{opts: opts, clock: clock.Or(opts.Clock), log: opts.Logger, ctx: ctx, cancel: cancel, runs: map[string]*run{}}
}

// Submit checks req, plans it on t and starts it. It returns the
// work-flow's first status (state running). Errors: a
// *protocol.FieldError (a bad field), a *GraphError (a malformed DAG),
// ErrNoReplica, ErrBusy, ErrClosed.
func (e *Executor) Submit(t Target, req protocol.WorkflowRequest) (protocol.WorkflowStatus, error) {
	if t.Estimate == nil {
		t.Estimate = func(string) float64 { return 1 }
	}
	p, g, err := compile(req, t.Estimate)
	if err != nil {
		return protocol.WorkflowStatus{}, err
	}
	if len(t.Replicas) == 0 {
		return protocol.WorkflowStatus{}, fmt.Errorf("%w: group %s", ErrNoReplica, t.Group)
	}
	if t.Parallel < 1 {
		t.Parallel = protocol.DefaultWorkflowParallel
	}
	now := e.clock.Now()
	var s scheduler
	if p.placement == protocol.PlacementRoundRobin {
		s = newRoundRobin(p, len(t.Replicas), t.Parallel)
	} else {
		s = eft.NewCore(g, len(t.Replicas), t.Parallel, now)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return protocol.WorkflowStatus{}, ErrClosed
	}
	e.pruneLocked(now)
	if e.running >= e.opts.MaxRunning {
		return protocol.WorkflowStatus{}, fmt.Errorf("%w (%d; at most %d at once)", ErrBusy, e.running, e.opts.MaxRunning)
	}
	r := newRun(e, newID(), t, p, s, now)
	e.runs[r.id] = r
	e.order = append(e.order, r)
	e.running++
	ctx, cancel := context.WithCancel(e.ctx)
	r.cancel = cancel
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer cancel()
		r.loop(ctx)
		e.ended(r)
	}()
	return r.status(), nil
}

// ended counts a finished run out and prunes.
func (e *Executor) ended(r *run) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	e.pruneLocked(e.clock.Now())
}

// pruneLocked forgets finished work-flows older than Keep, then the
// oldest finished beyond MaxKept. Caller holds e.mu.
func (e *Executor) pruneLocked(now time.Time) {
	var finished []*run
	kept := e.order[:0]
	for _, r := range e.order {
		end, ok := r.finishedAt()
		switch {
		case !ok:
			kept = append(kept, r)
		case now.Sub(end) >= e.opts.Keep:
			delete(e.runs, r.id)
		default:
			kept = append(kept, r)
			finished = append(finished, r)
		}
	}
	clear(e.order[len(kept):])
	e.order = kept
	if extra := len(finished) - e.opts.MaxKept; extra > 0 {
		sort.SliceStable(finished, func(i, j int) bool {
			a, _ := finished[i].finishedAt()
			b, _ := finished[j].finishedAt()
			return a.Before(b)
		})
		drop := map[*run]bool{}
		for _, r := range finished[:extra] {
			drop[r] = true
			delete(e.runs, r.id)
		}
		kept := e.order[:0]
		for _, r := range e.order {
			if !drop[r] {
				kept = append(kept, r)
			}
		}
		clear(e.order[len(kept):])
		e.order = kept
	}
}

// lookup finds work-flow id of group. Errors: ErrUnknown.
func (e *Executor) lookup(group, id string) (*run, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pruneLocked(e.clock.Now())
	r := e.runs[id]
	if r == nil || r.target.Group != group {
		return nil, fmt.Errorf("%w: %s in group %s", ErrUnknown, id, group)
	}
	return r, nil
}

// Status is work-flow id's current status. Errors: ErrUnknown (never
// submitted to group, or forgotten).
func (e *Executor) Status(group, id string) (protocol.WorkflowStatus, error) {
	r, err := e.lookup(group, id)
	if err != nil {
		return protocol.WorkflowStatus{}, err
	}
	return r.status(), nil
}

// List summarises group's running and kept work-flows, oldest first.
func (e *Executor) List(group string) []protocol.WorkflowSummary {
	e.mu.Lock()
	e.pruneLocked(e.clock.Now())
	var runs []*run
	for _, r := range e.order {
		if r.target.Group == group {
			runs = append(runs, r)
		}
	}
	e.mu.Unlock()
	out := make([]protocol.WorkflowSummary, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.summary())
	}
	return out
}

// Cancel stops work-flow id: calls in flight are abandoned (failed), tasks
// not started are skipped, its state becomes cancelled. It returns once
// the work-flow has stopped, with its status; a finished work-flow is
// left as it is. Errors: ErrUnknown.
func (e *Executor) Cancel(group, id string) (protocol.WorkflowStatus, error) {
	r, err := e.lookup(group, id)
	if err != nil {
		return protocol.WorkflowStatus{}, err
	}
	r.cancel()
	<-r.done
	return r.status(), nil
}

// Close cancels every running work-flow (as Cancel) and waits for their
// goroutines to end. Submit then fails with ErrClosed; statuses stay
// readable.
func (e *Executor) Close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
}

// newID is a random work-flow id (16 hex digits).
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Wait returns work-flow id's status once it has finished, or its
// current status when ctx ends first. Errors: ErrUnknown.
func (e *Executor) Wait(ctx context.Context, group, id string) (protocol.WorkflowStatus, error) {
	r, err := e.lookup(group, id)
	if err != nil {
		return protocol.WorkflowStatus{}, err
	}
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	return r.status(), nil
}
