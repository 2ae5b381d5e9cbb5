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

// Lease is the lease the entry is on now, NoLease while it has none (the
// lease lost, not yet registered again): keys put on it go with the
// entry.
func (d *Directory) Lease() clientv3.LeaseID {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lease
}

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
