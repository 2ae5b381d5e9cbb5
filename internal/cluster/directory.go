package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults and bounds of Options.
const (
	DefaultSessionTTL = 3 * time.Second
	// MinSessionTTL: etcd's lease TTLs are whole seconds, and one second
	// leaves no room for a keep-alive.
	MinSessionTTL = 2 * time.Second
)

// Options of a Directory.
type Options struct {
	// Client is the etcd client (required); the Directory does not close
	// it.
	Client *clientv3.Client
	// Prefix is the deployment's etcd prefix; it must start and end with
	// "/".
	Prefix string
	// Self is this instance's entry: Name (required, without "/"),
	// AdminURL, Started, Version. Its FrontDoors are set by SetFrontDoors.
	Self Entry
	// SessionTTL is the TTL of the entry's lease: whole seconds, at least
	// MinSessionTTL; DefaultSessionTTL when 0.
	SessionTTL time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		return o, errors.New("cluster: client: none given, want an etcd client")
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return o, fmt.Errorf("cluster: prefix %q: must start and end with /", o.Prefix)
	}
	if o.Self.Name == "" || strings.Contains(o.Self.Name, "/") {
		return o, fmt.Errorf("cluster: instance name %q: want a non-empty name without /", o.Self.Name)
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.SessionTTL < MinSessionTTL || o.SessionTTL%time.Second != 0 {
		return o, fmt.Errorf("cluster: session_ttl %v: must be whole seconds, at least %v", o.SessionTTL, MinSessionTTL)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Directory is this instance's entry in the directory, kept on its lease,
// and its view of every live instance's entry. Safe for concurrent use.
type Directory struct {
	opts  Options
	cli   *clientv3.Client
	root  string // <prefix>instances/
	key   string // this instance's key
	pause time.Duration

	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	workers sync.WaitGroup
	dirty   chan struct{} // the entry changed; capacity 1

	mu      sync.Mutex
	self    Entry
	lease   clientv3.LeaseID // the entry's lease; NoLease while it has none
	others  map[string]Entry // the other instances' entries, as watched
	changed chan struct{}    // closed at the next change of the view
	closed  bool
}

// Open claims the instance's name and registers its entry: when another
// lease holds the name, it waits for that key to go (the holder lease's
// TTL and ExpiryGrace) and then fails with a *NameTakenError. ctx bounds
// the claim. The Directory then keeps the entry alive and watches the
// others' until Close.
func Open(ctx context.Context, opts Options) (*Directory, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Directory{
		opts:    opts,
		cli:     opts.Client,
		root:    opts.Prefix + InstancesDir,
		key:     Key(opts.Prefix, opts.Self.Name),
		pause:   opts.SessionTTL / 4,
		dirty:   make(chan struct{}, 1),
		self:    opts.Self,
		others:  map[string]Entry{},
		changed: make(chan struct{}),
	}
	if d.self.FrontDoors == nil {
		d.self.FrontDoors = map[string]protocol.FrontDoorBinding{}
	}
	lease, err := d.claim(ctx)
	if err != nil {
		return nil, err
	}
	d.lease = lease
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.workers.Add(2)
	go d.keep(lease)
	go d.observe()
	return d, nil
}

// claim creates the entry on a new lease, waiting for another holder's
// key to go first; it returns the lease.
func (d *Directory) claim(ctx context.Context) (clientv3.LeaseID, error) {
	var (
		deadline time.Time
		started  = time.Now()
	)
	for {
		resp, err := d.cli.Get(ctx, d.key)
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", d.key, err)
		}
		held := len(resp.Kvs) > 0
		var holderLease int64
		if held {
			holderLease = resp.Kvs[0].Lease
		}
		now := time.Now()
		switch decideClaim(held, holderLease, 0, !deadline.IsZero() && !now.Before(deadline)) {
		case claimCreate:
			lease, ok, err := d.create(ctx)
			if err != nil {
				return 0, err
			}
			if ok {
				return lease, nil
			}
			continue // taken meanwhile: look again
		case claimRefuse:
			e := &NameTakenError{Name: d.opts.Self.Name, Waited: now.Sub(started)}
			if held, err := DecodeEntry(d.opts.Prefix, d.key, resp.Kvs[0].Value); err == nil {
				e.AdminURL = held.AdminURL
			}
			return 0, e
		}
		if deadline.IsZero() {
			var ttl time.Duration
			if t, err := d.cli.TimeToLive(ctx, clientv3.LeaseID(holderLease)); err == nil && t.GrantedTTL > 0 {
				ttl = time.Duration(t.GrantedTTL) * time.Second
			}
			wait := claimWaitFor(ttl, d.opts.SessionTTL)
			deadline = now.Add(wait)
			var at string
			if held, err := DecodeEntry(d.opts.Prefix, d.key, resp.Kvs[0].Value); err == nil {
				at = held.AdminURL
			}
			d.opts.Logger.Warn("instance name is held by another instance; waiting for its entry to expire", "instance", d.opts.Self.Name, "holder_admin_url", at, "wait", wait)
		}
		if err := d.awaitGone(ctx, resp.Header.Revision, deadline); err != nil {
			return 0, err
		}
	}
}

// awaitGone watches the key from after rev until it is deleted or
// deadline passes.
func (d *Directory) awaitGone(ctx context.Context, rev int64, deadline time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for wr := range d.cli.Watch(wctx, d.key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
		if wr.Err() != nil {
			return nil // look again
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cluster: waiting for instance name %q: %w", d.opts.Self.Name, ctx.Err())
	}
	return nil
}

// create grants a lease and creates the entry on it if the key is absent;
// ok is false (and the lease revoked) when it is not.
func (d *Directory) create(ctx context.Context) (clientv3.LeaseID, bool, error) {
	g, err := d.cli.Grant(ctx, int64(d.opts.SessionTTL/time.Second))
	if err != nil {
		return 0, false, fmt.Errorf("cluster: grant a lease: %w", err)
	}
	d.mu.Lock()
	val, err := d.self.encode()
	d.mu.Unlock()
	if err != nil {
		return 0, false, err
	}
	tr, err := d.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(d.key), "=", 0)).
		Then(clientv3.OpPut(d.key, string(val), clientv3.WithLease(g.ID))).
		Commit()
	if err == nil && tr.Succeeded {
		return g.ID, true, nil
	}
	rctx, cancel := context.WithTimeout(context.Background(), d.opts.SessionTTL)
	_, _ = d.cli.Revoke(rctx, g.ID)
	cancel()
	if err != nil {
		return 0, false, fmt.Errorf("cluster: create %s: %w", d.key, err)
	}
	return 0, false, nil
}

// SetFrontDoors replaces this instance's front doors in its entry, which
// is written in the background.
func (d *Directory) SetFrontDoors(fd map[string]protocol.FrontDoorBinding) {
	d.mu.Lock()
	if maps.Equal(d.self.FrontDoors, fd) {
		d.mu.Unlock()
		return
	}
	d.self.FrontDoors = maps.Clone(fd)
	if d.self.FrontDoors == nil {
		d.self.FrontDoors = map[string]protocol.FrontDoorBinding{}
	}
	d.changedLocked()
	d.mu.Unlock()
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// Name is this instance's name.
func (d *Directory) Name() string { return d.opts.Self.Name }

// Self is this instance's entry as last set.
func (d *Directory) Self() Entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.self
	e.FrontDoors = maps.Clone(e.FrontDoors)
	return e
}

// Instances lists the live instances, sorted by name: this one (Self)
// and every other whose entry the watch holds.
func (d *Directory) Instances() []protocol.ClusterInstance {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []protocol.ClusterInstance{d.self.Instance(true)}
	for _, e := range d.others {
		out = append(out, e.Instance(false))
	}
	slices.SortFunc(out, func(a, b protocol.ClusterInstance) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Others are the other live instances' entries, sorted by name.
func (d *Directory) Others() []Entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Entry, 0, len(d.others))
	for _, e := range d.others {
		e.FrontDoors = maps.Clone(e.FrontDoors)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// AdminURL is the admin URL of live instance name (this one's too).
func (d *Directory) AdminURL(name string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if name == d.self.Name {
		return d.self.AdminURL, true
	}
	e, ok := d.others[name]
	return e.AdminURL, ok
}

// Changed returns a channel closed at the next change of the view: an
// instance's entry put or gone, or this one's front doors set.
func (d *Directory) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// changedLocked wakes the waiters of Changed. Caller must hold d.mu.
func (d *Directory) changedLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// Close stops keeping the entry and watching, and revokes the entry's
// lease, so that the entry goes at once; ctx bounds the revoke. Closing
// twice does nothing.
func (d *Directory) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.workers.Wait()
	d.mu.Lock()
	lease := d.lease
	d.lease = clientv3.NoLease
	d.mu.Unlock()
	if lease == clientv3.NoLease {
		return nil
	}
	if _, err := d.cli.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("cluster: revoke the entry's lease %x: %w", lease, err)
	}
	return nil
}

// wait waits d, or until ctx ends (false).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
