package replagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Timeouts of the agent's calls to the balancer and to peers.
const (
	defaultCallTimeout = 10 * time.Second
	// checkpointTimeout bounds taking a checkpoint from a peer.
	checkpointTimeout = time.Minute
	// DefaultReportInterval is how often the applied position is posted.
	DefaultReportInterval = time.Second
)

// Admin is what the agent needs of the balancer's admin API and of its
// peers; AdminClient is the HTTP one.
type Admin interface {
	// PostReplies posts replies to the instance whose admin API is at base.
	PostReplies(ctx context.Context, base string, replies []protocol.ReplicaReply) error
	// PostApplied posts an applied report to the instance at base.
	PostApplied(ctx context.Context, base string, r protocol.AppliedReport) error
	// Checkpoint takes a checkpoint from a peer agent: its server's state
	// and the position it is at.
	Checkpoint(ctx context.Context, peer protocol.LogPeer, maxState int64) ([]byte, uint64, error)
}

// Options configure an Agent.
type Options struct {
	// Group is the group's name; Self this replica's id.
	Group, Self string
	// Deliverer hands entries to the server. The agent closes it when Run
	// ends.
	Deliverer Deliverer
	// Source streams the log.
	Source LogSource
	// Admin posts replies and reports and takes checkpoints.
	Admin Admin
	// Admins are the admin API base URLs applied reports go to: every
	// one, so that every instance knows how far each replica applied.
	Admins []string
	// Store keeps the applied position; the agent does not close it.
	Store *Store
	// KeepReplies and KeepFor bound the reply cache (DefaultKeepReplies,
	// DefaultKeepFor).
	KeepReplies int
	KeepFor     time.Duration
	// DeliverTimeout bounds one delivery, default DefaultDeliverTimeout:
	// a server that takes longer stops the agent.
	DeliverTimeout time.Duration
	// MaxState bounds a checkpoint taken from a peer, default
	// DefaultMaxState.
	MaxState int64
	// ReportInterval is how often applied reports are posted, default
	// DefaultReportInterval.
	ReportInterval time.Duration
	// Outcaller posts the server's outgoing calls (serveOutcall) to the
	// Admins in order; default: Admin when it is one (AdminClient is).
	Outcaller Outcaller
	// MaxOutcall bounds the body of an outgoing call, default
	// DefaultMaxOutcall.
	MaxOutcall int64
	// Clock defaults to the real one; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

// Agent applies a replicated group's log to one unmodified server: the
// thin concurrent layer around Core. One goroutine (Run) takes the
// stream's events, delivers entries one at a time, stores the applied
// position (after every entry: see Run) and serves checkpoints between two
// entries; one goroutine posts replies in batches; one posts the applied
// position every ReportInterval. Create it with New, serve Handler, then
// call Run once.
type Agent struct {
	opts    Options
	clk     clock.Clock
	log     *slog.Logger
	applied atomic.Uint64
	// canCheckpoint is the server's, probed when Run starts.
	canCheckpoint atomic.Bool
	// joined is set once the agent took its first hello (and any state
	// transfer it led to): it then serves checkpoints.
	joined atomic.Bool
	// current is the entry being delivered (nil between entries), for
	// the server's outgoing calls (outcall.go).
	current     atomic.Pointer[entryCalls]
	checkpoints chan checkpointRequest
	done        chan struct{}
	post        *poster
	// delivered and deliverNS count deliveries, for the load reports.
	delivered atomic.Uint64
	deliverNS atomic.Uint64
	metricsMu sync.Mutex
	lastStats deliveryStats
}

// New returns an agent at the position opts.Store holds.
func New(opts Options) (*Agent, error) {
	switch {
	case opts.Group == "":
		return nil, errors.New("replagent: Options.Group is required")
	case opts.Deliverer == nil, opts.Source == nil, opts.Admin == nil, opts.Store == nil:
		return nil, errors.New("replagent: Options.Deliverer, Source, Admin and Store are required")
	}
	if opts.MaxState <= 0 {
		opts.MaxState = DefaultMaxState
	}
	if opts.DeliverTimeout <= 0 {
		opts.DeliverTimeout = DefaultDeliverTimeout
	}
	if opts.ReportInterval <= 0 {
		opts.ReportInterval = DefaultReportInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Outcaller == nil {
		opts.Outcaller, _ = opts.Admin.(Outcaller)
	}
	if opts.MaxOutcall <= 0 {
		opts.MaxOutcall = DefaultMaxOutcall
	}
	pos, err := opts.Store.Applied()
	if err != nil {
		return nil, err
	}
	a := &Agent{
		opts:        opts,
		clk:         clock.Or(opts.Clock),
		log:         opts.Logger.With("component", "replagent", "group", opts.Group),
		checkpoints: make(chan checkpointRequest),
		done:        make(chan struct{}),
	}
	a.post = &poster{admin: opts.Admin, wake: make(chan struct{}, 1), log: a.log}
	a.applied.Store(pos)
	return a, nil
}

// Applied is the last position applied and stored: what the agent
// reports.
func (a *Agent) Applied() uint64 { return a.applied.Load() }

// Run applies the log until ctx ends (nil) or the agent must stop: a
// delivery failed, an entry cannot be decoded, the replica cannot catch up
// (the error says why and, for an entry, names its position).
//
// The applied position is stored after every entry, once its reply is
// handed to the poster, and synced to disk before each applied report
// (about once a second; reports name only synced positions, since they
// let the log be trimmed). An agent killed between a delivery and that
// write finds the position before it when it starts again: if it rejoins
// by state transfer (its server can checkpoint and a live peer exists),
// nothing is lost; otherwise the entry is delivered to its server a second
// time. The same holds, for up to a second of entries, after the machine
// crashes.
func (a *Agent) Run(ctx context.Context) error {
	defer close(a.done)
	defer a.opts.Deliverer.Close()
	a.canCheckpoint.Store(a.opts.Deliverer.CanCheckpoint(ctx))
	core := NewCore(CoreConfig{
		Group: a.opts.Group, Self: a.opts.Self, Applied: a.applied.Load(),
		CanCheckpoint: a.canCheckpoint.Load(), KeepReplies: a.opts.KeepReplies, KeepFor: a.opts.KeepFor,
	})
	a.log.Info("replicated agent starting", "applied", core.Applied(), "checkpoints", a.canCheckpoint.Load())

	bg, stopBg := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.post.run(bg) })
	reports := a.clk.NewTicker(a.opts.ReportInterval) // made here: it ticks from Run's start
	wg.Go(func() { a.report(bg, reports) })
	defer func() {
		stopBg()
		wg.Wait()
		fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		a.post.flush(fctx)
		cancel()
	}()

	st := a.startStream(ctx, core.Applied()+1)
	defer func() { st.stop() }()
	for {
		se, err := a.next(ctx, st, core)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		act := core.Step(se.Event, se.Instance, a.clk.Now())
		if act.Kind == ActTransfer {
			st.stop()
			if act = a.transfer(ctx, core, act); act.Kind == ActContinue {
				st = a.startStream(ctx, core.Applied()+1)
			}
		}
		if (se.Event.Type == protocol.LogEventHello || se.Event.Type == protocol.LogEventEntry) && act.Kind != ActStop {
			a.joined.Store(true)
		}
		switch act.Kind {
		case ActDeliver:
			if err := a.deliver(ctx, core, act); err != nil {
				return err
			}
		case ActStop:
			if ctx.Err() != nil {
				return nil
			}
			return act.Err
		}
		a.post.add(core.TakeOutbox())
	}
}

// next takes the next event of the stream, serving checkpoint requests
// while it waits (between two entries). It returns a zero event when ctx
// ends, and the source's error when it cannot go on.
func (a *Agent) next(ctx context.Context, st *stream, core *Core) (SourcedEvent, error) {
	for {
		select {
		case <-ctx.Done():
			return SourcedEvent{}, nil
		case se := <-st.events:
			return se, nil
		case <-st.done:
			switch {
			case ctx.Err() != nil:
				return SourcedEvent{}, nil
			case st.err == nil:
				return SourcedEvent{}, fmt.Errorf("replagent: group %s: the log stream ended", a.opts.Group)
			}
			return SourcedEvent{}, st.err
		case cr := <-a.checkpoints:
			a.serveCheckpoint(cr, core)
		}
	}
}

// deliver delivers the entry of act, records its reply and stores the
// applied position.
func (a *Agent) deliver(ctx context.Context, core *Core, act Action) error {
	// MEAD's fault point 5: the agent dies after taking an entry from
	// the log, before delivering it (docs/testing.md).
	// gofail: var replAgentBeforeDeliver struct{}
	// failpoint.Kill()
	start := a.clk.Now()
	// Not cut short when the agent is told to stop: the server may apply
	// an entry it has begun, and its reply and position must be kept.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.DeliverTimeout)
	a.current.Store(&entryCalls{pos: act.Position}) // the server's outgoing calls are this entry's
	reply, err := a.opts.Deliverer.Deliver(dctx, act.Position, act.Request)
	a.current.Store(nil)
	cancel()
	if err != nil {
		return fmt.Errorf("replagent: group %s: the server did not answer the entry at position %d, and the replica stops rather than skip it: %w", a.opts.Group, act.Position, err)
	}
	now := a.clk.Now()
	a.delivered.Add(1)
	a.deliverNS.Add(uint64(max(now.Sub(start), 0)))
	core.Delivered(act.Position, act.ReplyTo, reply, now)
	a.post.add(core.TakeOutbox())
	if err := a.opts.Store.SetApplied(act.Position); err != nil {
		return err
	}
	a.applied.Store(act.Position) // reported only once durable
	// MEAD's fault point 4: the agent dies before taking the next entry
	// from the log, the last one applied and stored (docs/testing.md;
	// here rather than in next, which heartbeats also reach, so that the
	// nth evaluation is the nth entry).
	// gofail: var replAgentBeforeTake struct{}
	// failpoint.Kill()
	return nil
}

// transfer runs the state transfers act asks for, from one peer after
// another, and returns what to do next: ActContinue (stream from
// Applied()+1) or ActStop.
func (a *Agent) transfer(ctx context.Context, core *Core, act Action) Action {
	for act.Kind == ActTransfer {
		cctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
		state, pos, err := a.opts.Admin.Checkpoint(cctx, act.Peer, a.opts.MaxState)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return Action{Kind: ActStop, Err: ctx.Err()}
			}
			a.log.Warn("taking a checkpoint failed", "peer", act.Peer.ID, "address", act.Peer.Address, "err", err)
			act = core.TransferFailed(act.Peer.ID, err)
			continue
		}
		if err := a.opts.Deliverer.SetState(ctx, state); err != nil {
			return Action{Kind: ActStop, Err: fmt.Errorf("replagent: group %s: setting the state taken from %s at position %d on the server failed, and its state is now unknown: %w", a.opts.Group, act.Peer.ID, pos, err)}
		}
		core.Transferred(pos)
		if err := a.opts.Store.SetApplied(pos); err != nil {
			return Action{Kind: ActStop, Err: err}
		}
		a.applied.Store(pos)
		a.log.Info("state transferred", "peer", act.Peer.ID, "position", pos, "bytes", len(state))
		return Action{}
	}
	return act
}

// report posts the applied position to every admin URL at every tick of
// t (ReportInterval) until ctx ends, and stops t.
func (a *Agent) report(ctx context.Context, t clock.Ticker) {
	defer t.Stop()
	failing := make(map[string]bool)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		pos := a.applied.Load()
		if err := a.opts.Store.Sync(); err != nil {
			a.log.Warn("applied position not synced; not reported", "applied", pos, "err", err)
			continue
		}
		r := protocol.AppliedReport{Applied: pos, Checkpoints: a.canCheckpoint.Load()}
		for _, base := range a.opts.Admins {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := a.opts.Admin.PostApplied(rctx, base, r)
			cancel()
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil && !failing[base]:
				failing[base] = true
				a.log.Warn("applied report failed; will keep trying", "admin", base, "err", err)
			case err == nil && failing[base]:
				delete(failing, base)
				a.log.Info("applied reports reach the balancer again", "admin", base)
			}
		}
	}
}

// deliveryStats are the delivery counters at a load report.
type deliveryStats struct {
	at        time.Time
	delivered uint64
	ns        uint64
}

// Metrics are the replica's load for monitor.NewExternal: rps, the
// entries applied per second since the last call, and latency_ms, their
// mean delivery time.
func (a *Agent) Metrics(now time.Time) map[string]float64 {
	a.metricsMu.Lock()
	defer a.metricsMu.Unlock()
	cur := deliveryStats{at: now, delivered: a.delivered.Load(), ns: a.deliverNS.Load()}
	last := a.lastStats
	a.lastStats = cur
	if last.at.IsZero() || !now.After(last.at) {
		return nil
	}
	n := cur.delivered - last.delivered
	m := map[string]float64{protocol.MetricRPS: float64(n) / now.Sub(last.at).Seconds()}
	if n > 0 {
		m[protocol.MetricLatencyMS] = float64(cur.ns-last.ns) / float64(n) / 1e6
	}
	return m
}
