package etcdlog

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/replogtest"
)

// shared is the package's one-member etcd, started by TestMain (nil when
// etcd is not installed: the tests then fail with CI=true, skip
// otherwise).
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

// testTTL is the suite's session TTL: the shortest lease etcd grants
// reliably, so that the expiry test waits about that long.
const testTTL = 2 * time.Second

var prefixes atomic.Int64

func newPrefix(t testing.TB) string {
	return fmt.Sprintf("/replog-%d-%s/", prefixes.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
}

func newClient(t testing.TB) *clientv3.Client {
	t.Helper()
	etcdtest.Need(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: shared.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func openT(t testing.TB, o Options) *Log {
	t.Helper()
	if o.Client == nil {
		o.Client = newClient(t)
	}
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	opts := map[replog.Log]Options{}
	open := func(t *testing.T, o Options) replog.Log {
		o.Client = nil
		l := openT(t, o)
		mu.Lock()
		opts[l] = l.opts
		mu.Unlock()
		return l
	}
	get := func(l replog.Log) Options {
		mu.Lock()
		defer mu.Unlock()
		return opts[l]
	}
	replogtest.Run(t, replogtest.Harness{
		Sparse: true,
		Open: func(t *testing.T, lim replog.Limits) replog.Log {
			return open(t, Options{Prefix: newPrefix(t), Group: "g/1", Limits: lim, SessionTTL: testTTL})
		},
		Reopen: func(t *testing.T, l replog.Log) replog.Log {
			o := get(l)
			l.Close()
			o.Client.Close()
			return open(t, o)
		},
		Expire: func(t *testing.T, l replog.Log, session string) {
			o := get(l)
			key := newKeys(o.Prefix, o.Group).session(session)
			ctx, cancel := context.WithTimeout(context.Background(), 5*testTTL)
			defer cancel()
			resp, err := o.Client.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) == 0 {
				return
			}
			for wr := range o.Client.Watch(ctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
				if err := wr.Err(); err != nil {
					t.Fatal(err)
				}
				for _, ev := range wr.Events {
					if ev.Type == mvccpb.DELETE {
						return
					}
				}
			}
			t.Fatalf("session %q's key was not deleted within %v", session, 5*testTTL)
		},
		Garbage: func(t *testing.T, l replog.Log) uint64 {
			o := get(l)
			resp, err := o.Client.Put(context.Background(), newKeys(o.Prefix, o.Group).log+"garbage", "\xee\x01")
			if err != nil {
				t.Fatal(err)
			}
			return uint64(resp.Header.Revision)
		},
	})
}
