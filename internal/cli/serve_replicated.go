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
// store's prefix, on the store's client.
type replicatedLogs struct {
	dataDir string
	es      *etcdstore.Store // nil on a single node

	mu     sync.Mutex
	db     *boltlog.DB
	closed bool
}

// newReplicatedLogs returns the opener of cfg's store.
func newReplicatedLogs(cfg config.File, st store.Store) *replicatedLogs {
	r := &replicatedLogs{dataDir: cfg.DataDir}
	if es, ok := st.(*etcdstore.Store); ok && cfg.Store.Etcd.Enabled() {
		r.es = es
	}
	return r
}

// open implements balancer Options.ReplicatedLog.
func (r *replicatedLogs) open(group string, lim replog.Limits, ttl time.Duration) (replog.Log, error) {
	if r.es != nil {
		return etcdlog.Open(etcdlog.Options{Client: r.es.Client(), Prefix: r.es.Prefix(), Group: group, Limits: lim, SessionTTL: ttl})
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
