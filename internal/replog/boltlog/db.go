package boltlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// FileName is the log file's name in the data directory.
const FileName = "log.db"

// Defaults of Options.
const (
	DefaultMaxBatch   = 1024
	DefaultSweepEvery = time.Minute
	// openTimeout bounds the wait for another process's lock on the file.
	openTimeout = 2 * time.Second
)

// Options of a DB. The zero value is usable.
type Options struct {
	// Clock stamps entries and expires sessions; nil: the system clock.
	Clock clock.Clock
	// MaxBatch bounds the appends committed in one transaction; default
	// DefaultMaxBatch, at least 1.
	MaxBatch int
	// SweepEvery is how often expired sessions are swept; default
	// DefaultSweepEvery; negative: never (Sweep by hand).
	SweepEvery time.Duration
}

// DB is one bbolt file holding the logs of any number of groups. Safe for
// concurrent use.
type DB struct {
	db    *bolt.DB
	opts  Options
	clock clock.Clock

	reqs    chan *request
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the committer has replied to all it took
	wg      sync.WaitGroup

	mu      sync.Mutex
	groups  map[string]*Log
	changed chan struct{} // closed and replaced after each change of any log
	closed  bool
}

// Open opens (creating it if needed) the log file at path.
func Open(path string, opts Options) (*DB, error) {
	if opts.MaxBatch == 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxBatch < 1 {
		return nil, fmt.Errorf("boltlog: max batch %d: must be at least 1", opts.MaxBatch)
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = DefaultSweepEvery
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout})
	if err != nil {
		return nil, fmt.Errorf("boltlog: open %s: %w", path, err)
	}
	if err := checkSchema(b); err != nil {
		b.Close()
		return nil, fmt.Errorf("boltlog: %s: %w", path, err)
	}
	d := &DB{
		db: b, opts: opts, clock: clock.Or(opts.Clock),
		reqs: make(chan *request), stop: make(chan struct{}), stopped: make(chan struct{}),
		groups: map[string]*Log{}, changed: make(chan struct{}),
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(d.stopped)
		d.commitLoop()
	}()
	if opts.SweepEvery > 0 {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.sweepLoop()
		}()
	}
	return d, nil
}

// GroupOptions configure one group's log.
type GroupOptions struct {
	Limits replog.Limits
	// SessionTTL is how long a session's dedup keys live after its last
	// use; default replog.DefaultSessionTTL, at least 1ms.
	SessionTTL time.Duration
}

// Group returns the log of the named group (an empty one when it has
// none yet). A group is opened once per DB.
func (d *DB) Group(name string, o GroupOptions) (*Log, error) {
	if name == "" {
		return nil, errors.New("boltlog: group: empty name")
	}
	lim, err := o.Limits.WithDefaults()
	if err != nil {
		return nil, err
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = replog.DefaultSessionTTL
	}
	if err := replog.CheckTTL(o.SessionTTL, time.Millisecond); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, replog.ErrClosed
	}
	if _, ok := d.groups[name]; ok {
		return nil, fmt.Errorf("boltlog: group %q: opened already", name)
	}
	l := &Log{d: d, name: name, bucket: []byte("g/" + name), limits: lim, ttl: o.SessionTTL, closed: make(chan struct{})}
	d.groups[name] = l
	return l, nil
}

// Close stops the committer and the sweeper, ends every watch with
// replog.ErrClosed and closes the file. A second call does nothing.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	close(d.stop)
	d.wg.Wait()
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("boltlog: close: %w", err)
	}
	return nil
}

// changes returns the channel closed at the next change of any log.
func (d *DB) changes() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// notify wakes every watch.
func (d *DB) notify() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.changed)
	d.changed = make(chan struct{})
}

func (d *DB) sweepLoop() {
	t := d.clock.NewTicker(d.opts.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C():
		}
		d.mu.Lock()
		logs := make([]*Log, 0, len(d.groups))
		for _, l := range d.groups {
			logs = append(logs, l)
		}
		d.mu.Unlock()
		for _, l := range logs {
			// A failed sweep is tried again next tick; expiry is also
			// checked on every use, so nothing depends on it.
			_, _ = l.Sweep(context.Background())
		}
	}
}
