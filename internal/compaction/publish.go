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

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
)

// Dir is where the published revisions are, under the deployment's
// prefix: <prefix>compact/<instance>.
const Dir = "compact/"

// Key is the etcd key of instance's lowest needed revision.
func Key(prefix, instance string) string { return prefix + Dir + instance }

// Defaults of PublisherOptions.
const (
	DefaultPublishEvery = 5 * time.Second
	// RaiseEveryTimes: a higher revision (the watches moved on) is
	// published at most every RaiseEveryTimes × Every, a lower one (a
	// watch that needs older history) at the next tick.
	RaiseEveryTimes = 6
)

// PublisherOptions of a Publisher.
type PublisherOptions struct {
	// Client is the etcd client (required); not closed by the Publisher.
	Client *clientv3.Client
	// Prefix is the deployment's prefix (starts and ends with "/").
	Prefix string
	// Instance is this instance's name (required, without "/").
	Instance string
	// Lease is the lease the key goes on (the instance directory's,
	// cluster.Directory.Lease): the key goes with the instance. NoLease:
	// nothing is written until there is one.
	Lease func() clientv3.LeaseID
	// Needs are the instance's watches (required).
	Needs *Needs
	// Every is how often the revision is looked at; default
	// DefaultPublishEvery.
	Every time.Duration
	// Timeout bounds each etcd call; default Every.
	Timeout time.Duration
	Clock   clock.Clock
	Metrics *Metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o PublisherOptions) withDefaults() (PublisherOptions, error) {
	if err := checkEtcd(o.Client, o.Prefix); err != nil {
		return o, err
	}
	switch {
	case o.Instance == "" || strings.Contains(o.Instance, "/"):
		return o, fmt.Errorf("compaction: instance %q: want a non-empty name without /", o.Instance)
	case o.Lease == nil:
		return o, errors.New("compaction: lease: none given, want the directory entry's lease")
	case o.Needs == nil:
		return o, errors.New("compaction: needs: none given")
	case o.Every < 0:
		return o, fmt.Errorf("compaction: publish interval %v: must be positive", o.Every)
	}
	if o.Every == 0 {
		o.Every = DefaultPublishEvery
	}
	if o.Timeout <= 0 {
		o.Timeout = o.Every
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// lastWrite is what the publisher last wrote.
type lastWrite struct {
	rev   int64
	lease clientv3.LeaseID
	at    time.Time // zero: nothing written yet
}

// shouldPublish decides whether to write want now: never without a
// lease; at once when the key is not there as last written (the first
// write, a new lease, the key gone with a lost one); a lower revision at
// once; a higher one at most every raise.
func shouldPublish(now time.Time, last lastWrite, lease clientv3.LeaseID, present bool, want int64, raise time.Duration) bool {
	switch {
	case lease == clientv3.NoLease:
		return false
	case last.at.IsZero() || last.lease != lease || !present:
		return true
	case want < last.rev:
		return true
	case want > last.rev:
		return now.Sub(last.at) >= raise
	}
	return false
}

// Publisher keeps <prefix>compact/<instance> at the instance's lowest
// needed revision: the lowest of its Needs, or etcd's revision when no
// watch needs any, never above etcd's revision.
type Publisher struct {
	opts PublisherOptions
	key  string
	loop *loop

	mu   sync.Mutex
	last lastWrite
}

// StartPublisher starts publishing in the background until Close: the
// first write a tick (Every) after start.
func StartPublisher(opts PublisherOptions) (*Publisher, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Publisher{opts: opts, key: Key(opts.Prefix, opts.Instance)}
	// The first write a tick after start, not among the start-up's reads
	// and watches (a watch created behind etcd's revision is synced by
	// etcd only every 100 ms).
	p.loop = startLoop(opts.Clock, opts.Every, p.step)
	return p, nil
}

// Close stops publishing (the key stays, on its lease).
func (p *Publisher) Close() { p.loop.close() }

// Published is the revision last written, and false before the first
// write.
func (p *Publisher) Published() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.rev, !p.last.at.IsZero()
}

// step publishes once; a failure is logged and counted, and tried again
// at the next tick.
func (p *Publisher) step(ctx context.Context) {
	if err := p.publish(ctx); err != nil && ctx.Err() == nil {
		p.opts.Metrics.failed(opPublish)
		p.opts.Logger.Warn("etcd compaction: cannot publish this instance's lowest needed revision; trying again", "key", p.key, "err", err)
	}
}

// publish looks at the key and etcd's revision, and writes the lowest
// needed revision when shouldPublish says so.
func (p *Publisher) publish(ctx context.Context) error {
	lease := p.opts.Lease()
	if lease == clientv3.NoLease {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	resp, err := p.opts.Client.Get(ctx, p.key)
	if err != nil {
		return fmt.Errorf("compaction: read %s: %w", p.key, err)
	}
	want := resp.Header.Revision
	if low, ok := p.opts.Needs.Lowest(); ok {
		want = min(want, low)
	}
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	present := len(resp.Kvs) == 1 && clientv3.LeaseID(resp.Kvs[0].Lease) == lease && string(resp.Kvs[0].Value) == strconv.FormatInt(last.rev, 10)
	now := p.opts.Clock.Now()
	if !shouldPublish(now, last, lease, present, want, RaiseEveryTimes*p.opts.Every) {
		return nil
	}
	if _, err := p.opts.Client.Put(ctx, p.key, strconv.FormatInt(want, 10), clientv3.WithLease(lease)); err != nil {
		return fmt.Errorf("compaction: write %s = %d on lease %x: %w", p.key, want, lease, err)
	}
	p.mu.Lock()
	p.last = lastWrite{rev: want, lease: lease, at: now}
	p.mu.Unlock()
	return nil
}
