package cli

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/compaction"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// An instance on etcd with compact_every 1s publishes what its store's
// watch needs on its directory lease, leads the compaction election
// (alone), and compacts etcd's history — never above what it published;
// GET /v1/cluster's leaders leave the election out.
func TestServeCompactsEtcd(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	cfg.Store.Etcd = config.EtcdStore{Endpoints: etcd.Endpoints(), Prefix: "/compact-serve/", SessionTTL: protocol.Duration(2 * time.Second),
		CompactEvery: config.OptionalDuration{Value: protocol.Duration(time.Second), Set: true}}
	st, err := openStore(ctx, cfg, false, log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cr, err := openCluster(ctx, cfg, st, config.Instance{Name: "a", AdminURL: "http://127.0.0.1:1"}, "test", log)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCluster(cr, log)
	lead, err := startLeader(cfg, st, "a", log)
	if err != nil {
		t.Fatal(err)
	}
	defer lead.close(log)
	sc, err := startCompaction(cfg, st, cr, lead, 50*time.Millisecond, log)
	if err != nil || sc == nil || sc.run == nil {
		t.Fatalf("startCompaction = %+v, %v; want a publisher and a runner", sc, err)
	}
	defer sc.close()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	if _, err := st.Watch(wctx, "", 0); err != nil { // what the balancer's follower runs
		t.Fatal(err)
	}
	cli := cr.cli
	first, err := cli.Put(ctx, "/elsewhere", "0")
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// Compacted past first: the watch's need moves on (progress
	// notifications), and compaction with it.
	for sc.run.Revision() < first.Header.Revision {
		if _, err := cli.Put(ctx, "/elsewhere", "1"); err != nil { // etcd moves on
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("etcd compacted to %d, not past %d within the test's time", sc.run.Revision(), first.Header.Revision)
		case <-tick.C:
		}
	}
	compacted := sc.run.Revision()
	if _, err := cli.Get(ctx, "/elsewhere", clientv3.WithRev(compacted-1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at %d: %v, want ErrCompacted", compacted-1, err)
	}
	resp, err := cli.Get(ctx, compaction.Key("/compact-serve/", "a"))
	if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) != cr.dir.Lease() {
		t.Fatalf("a's compaction key: %+v, %v; want one on its directory lease", resp, err)
	}
	if pub, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err != nil || pub < compacted {
		t.Errorf("a published %q, below the compaction at %d", resp.Kvs[0].Value, compacted)
	}
	if _, ok := lead.el.Leaders()[compaction.Election]; !ok {
		t.Errorf("the election's leaders %v lack %s", lead.el.Leaders(), compaction.Election)
	}
	if l := withoutCompaction(lead.leaders())(); len(l) != 0 {
		t.Errorf("GET /v1/cluster's leaders = %v, want none (no group)", l)
	}
}
