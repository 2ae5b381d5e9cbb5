package cli

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/compaction"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// On a single node every group's log is in log.db in the data directory,
// opened at the first group and closed after the balancer.
func TestReplicatedLogsSingleNode(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	st, err := boltstore.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := newReplicatedLogs(cfg, st, nil)
	path := filepath.Join(cfg.DataDir, boltlog.FileName)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("log.db exists before any replicated group: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, g := range []string{"a", "b"} {
		l, err := r.open(g, replog.Limits{}, 0)
		if err != nil {
			t.Fatalf("open %s: %v", g, err)
		}
		if _, ok := l.(*boltlog.Log); !ok {
			t.Fatalf("open %s: a %T, want a *boltlog.Log", g, l)
		}
		if pos, _, err := l.AppendOrGet(ctx, replog.Append{Session: "s", Seq: 1, Payload: []byte(g), Origin: "solo"}); err != nil || pos != 1 {
			t.Fatalf("append to %s: %d, %v; want position 1 (a log per group)", g, pos, err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("log.db: %v", err)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.open("c", replog.Limits{}, 0); !errors.Is(err, replog.ErrClosed) {
		t.Errorf("open after close: %v, want replog.ErrClosed", err)
	}
}

// With store.etcd the logs are etcd's, under the store's prefix.
func TestReplicatedLogsCluster(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.New(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := config.Default()
	cfg.Store.Etcd = config.EtcdStore{Endpoints: etcd.Endpoints(), Prefix: "/fl/"}
	st, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: etcd.Endpoints(), Prefix: "/fl/"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	compact := &serveCompact{needs: &compaction.Needs{}}
	r := newReplicatedLogs(cfg, st, compact)
	defer r.close()
	l, err := r.open("a", replog.Limits{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, ok := l.(*neededLog); !ok || n.Log == nil {
		t.Fatalf("a %T, want an etcd log (*neededLog)", l)
	}
	pos, _, err := l.AppendOrGet(ctx, replog.Append{Session: "s", Seq: 1, Payload: []byte("x"), Origin: "fa"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := st.Client().Get(ctx, "/fl/log/a/", clientv3.WithPrefix())
	if err != nil || resp.Count != 1 || uint64(resp.Kvs[0].ModRevision) != pos {
		t.Fatalf("etcd keys under /fl/log/a/: %v (err %v), want the entry at revision %d", resp, err, pos)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, boltlog.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log.db opened in cluster mode: %v", err)
	}
	// A watch of the log counts in what the instance publishes it needs
	// of etcd's history.
	next, stop := iter.Pull2(l.Watch(ctx, 0))
	defer stop()
	if e, err, ok := next(); !ok || err != nil || e.Position != pos {
		t.Fatalf("watch: %+v, %v, %v; want the entry at %d", e, err, ok, pos)
	}
	if rev, ok := compact.needs.Lowest(); !ok || rev <= int64(pos) {
		t.Errorf("published need %d (%v) while the log is watched, want one past the entry read (%d)", rev, ok, pos)
	}
}
