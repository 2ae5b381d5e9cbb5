package cli

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/etcdlog"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// replicatedLogs opens the logs of replicated groups (balancer
// Options.ReplicatedLog): on a single node one bbolt file, log.db in the
// data directory, holding every group's log, opened at the first
// replicated group; with store.etcd the logs are in etcd, under the
// store's prefix, on the store's client, and each open log's watches are
// part of what the instance publishes it needs of etcd's history
// (serveCompact.watchLog) until the log closes.
type replicatedLogs struct {
	dataDir string
	es      *etcdstore.Store // nil on a single node
	compact *serveCompact    // nil on a single node

	mu     sync.Mutex
	db     *boltlog.DB
	closed bool
}

// newReplicatedLogs returns the opener of cfg's store; compact is the
// instance's part in etcd's compaction (nil on a single node).
func newReplicatedLogs(cfg config.File, st store.Store, compact *serveCompact) *replicatedLogs {
	r := &replicatedLogs{dataDir: cfg.DataDir, compact: compact}
	if es, ok := st.(*etcdstore.Store); ok && cfg.Store.Etcd.Enabled() {
		r.es = es
	}
	return r
}

// open implements balancer Options.ReplicatedLog.
func (r *replicatedLogs) open(group string, lim replog.Limits, ttl time.Duration) (replog.Log, error) {
	if r.es != nil {
		l, err := etcdlog.Open(etcdlog.Options{Client: r.es.Client(), Prefix: r.es.Prefix(), Group: group, Limits: lim, SessionTTL: ttl})
		if err != nil {
			return nil, err
		}
		return &neededLog{Log: l, remove: r.compact.watchLog(l.LowestNeeded)}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, replog.ErrClosed
	}
	if r.db == nil {
		db, err := boltlog.Open(filepath.Join(r.dataDir, boltlog.FileName), boltlog.Options{})
		if err != nil {
			return nil, fmt.Errorf("serve: replicated log: %w", err)
		}
		r.db = db
	}
	return r.db.Group(group, boltlog.GroupOptions{Limits: lim, SessionTTL: ttl})
}

// close closes log.db, once the balancer has stopped.
func (r *replicatedLogs) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db = nil
	return err
}

// neededLog is an etcd log whose watches count in what the instance
// publishes it needs of etcd's history, until it closes.
type neededLog struct {
	*etcdlog.Log
	once   sync.Once
	remove func()
}

// Close implements replog.Log.
func (l *neededLog) Close() error {
	l.once.Do(l.remove)
	return l.Log.Close()
}
