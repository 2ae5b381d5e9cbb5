package compaction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
)

// Election is the leader election (package leader, joined like a group)
// whose leader compacts: not a group name, which never holds "_".
const Election = "_compact"

// RunnerOptions of a Runner.
type RunnerOptions struct {
	// Client is the etcd client (required); not closed by the Runner.
	Client *clientv3.Client
	// Prefix is the deployment's prefix (starts and ends with "/").
	Prefix string
	// Every is the period (store.etcd.compact_every): at most one
	// compaction a period, to what was needed a period before. > 0.
	Every time.Duration
	// Live lists the live instances' names (the instance directory).
	Live func() []string
	// Leading tells whether this instance compacts now (it leads the
	// Election).
	Leading func() bool
	// Join, when set, is called at the first look (and again at the next
	// ones until it succeeds): the instance campaigns in the Election
	// there, not at start, so that its campaign's write does not land
	// among the start-up's reads and watches (a watch created behind
	// etcd's revision is synced by etcd only every 100 ms).
	Join func() error
	// Timeout bounds each etcd call; default 5s.
	Timeout time.Duration
	Clock   clock.Clock
	Metrics *Metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnStep, when set, is called after every look while leading with
	// Core's decision and the compaction's error (nil when none was
	// tried or it succeeded); it must not block for long.
	OnStep func(Decision, error)
}

func (o RunnerOptions) withDefaults() (RunnerOptions, error) {
	if err := checkEtcd(o.Client, o.Prefix); err != nil {
		return o, err
	}
	switch {
	case o.Every <= 0:
		return o, fmt.Errorf("compaction: compact_every %v: must be positive", o.Every)
	case o.Live == nil || o.Leading == nil:
		return o, errors.New("compaction: live and leading: both required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Runner compacts etcd while its instance leads the Election: it looks
// four times a period, and each look that Core decides on compacts
// (clientv3.Compact, not physical).
type Runner struct {
	opts   RunnerOptions
	loop   *loop
	joined bool // Join succeeded (or there is none); the loop's goroutine only

	mu   sync.Mutex
	core *Core
}

// StartRunner starts the Runner in the background until Close.
func StartRunner(opts RunnerOptions) (*Runner, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Runner{opts: opts, core: NewCore(opts.Every), joined: opts.Join == nil}
	r.loop = startLoop(opts.Clock, max(opts.Every/4, time.Millisecond), r.step)
	return r, nil
}

// Close stops the Runner.
func (r *Runner) Close() { r.loop.close() }

// Revision is the revision this Runner last compacted etcd to (or found
// it compacted to); 0 before.
func (r *Runner) Revision() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.core.Revision()
}

// step is one look: while leading, read every published revision and
// compact if Core says so; otherwise forget what was captured.
func (r *Runner) step(ctx context.Context) {
	if !r.joined {
		if err := r.opts.Join(); err != nil {
			r.opts.Logger.Warn("etcd compaction: cannot campaign to compact; trying again", "err", err)
			return
		}
		r.joined = true
	}
	if !r.opts.Leading() {
		r.mu.Lock()
		r.core.Reset()
		r.mu.Unlock()
		return
	}
	d, err := r.look(ctx)
	if r.opts.OnStep != nil && ctx.Err() == nil {
		r.opts.OnStep(d, err)
	}
}

// look reads, decides and compacts; d is the decision (zero when the read
// failed), err the failure.
func (r *Runner) look(ctx context.Context) (d Decision, err error) {
	v, err := r.read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.opts.Metrics.failed(opRead)
			r.opts.Logger.Warn("etcd compaction: cannot read the instances' lowest needed revisions", "err", err)
		}
		return Decision{}, err
	}
	r.mu.Lock()
	d = r.core.Step(r.opts.Clock.Now(), v)
	r.mu.Unlock()
	if !d.Compact {
		r.opts.Logger.Debug("etcd compaction: not now", "reason", d.Reason)
		return d, nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	_, err = r.opts.Client.Compact(cctx, d.Rev)
	switch {
	case err == nil:
		r.opts.Logger.Info("etcd compaction: history compacted", "revision", d.Rev, "current", v.Current)
	case errors.Is(err, rpctypes.ErrCompacted):
		// Compacted at or past it already (another instance, an operator).
	default:
		if ctx.Err() == nil {
			r.opts.Metrics.failed(opCompact)
			r.opts.Logger.Warn("etcd compaction: compact failed; trying again next period", "revision", d.Rev, "err", err)
		}
		return d, fmt.Errorf("compaction: compact etcd to %d: %w", d.Rev, err)
	}
	r.mu.Lock()
	r.core.Compacted(d.Rev)
	r.mu.Unlock()
	r.opts.Metrics.compacted(d.Rev)
	return d, nil
}

// read is a View: the live instances, and every published revision read
// at etcd's current revision. A value that is not a revision counts as
// not published (logged).
func (r *Runner) read(ctx context.Context) (View, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	dir := r.opts.Prefix + Dir
	resp, err := r.opts.Client.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return View{}, fmt.Errorf("compaction: read %s: %w", dir, err)
	}
	v := View{Live: r.opts.Live(), Needed: map[string]int64{}, Current: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), dir)
		rev, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil || rev < 0 {
			r.opts.Logger.Warn("etcd compaction: a published revision is not a revision; that instance counts as not published", "key", string(kv.Key), "value", string(kv.Value))
			continue
		}
		v.Needed[name] = rev
	}
	return v, nil
}
