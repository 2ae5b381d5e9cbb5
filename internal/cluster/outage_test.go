package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// logSignal is a slog handler that closes a channel at the first record
// whose message contains a text.
type logSignal struct {
	mu    sync.Mutex
	waits map[string]chan struct{}
}

func (l *logSignal) on(text string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waits == nil {
		l.waits = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	l.waits[text] = ch
	return ch
}

func (l *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSignal) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logSignal) WithGroup(string) slog.Handler            { return l }
func (l *logSignal) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for text, ch := range l.waits {
		if strings.Contains(r.Message, text) {
			close(ch)
			delete(l.waits, text)
		}
	}
	return nil
}

// etcd stopped longer than the session TTL: the instance notices its
// lease lost, and once etcd is back it registers its entry again on a new
// lease, and a change of its front doors reaches the other instance.
func TestEtcdOutage(t *testing.T) {
	t.Parallel()
	etcdtest.Need(t)
	c := etcdtest.New(t, etcdtest.Options{})
	ctx := ctxT(t, 60*time.Second)
	newClient := func() *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	const prefix = "/outage/"
	logs := &logSignal{}
	lost := logs.on("lease is lost")
	again := logs.on("entry registered again")
	a, err := Open(ctx, Options{Client: newClient(), Prefix: prefix, SessionTTL: 2 * time.Second, Logger: slog.New(logs), Self: Entry{Name: "a", AdminURL: "http://a.example:7070"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	a.SetFrontDoors(map[string]protocol.FrontDoorBinding{"prime": {Address: "127.0.0.1:8000"}})
	obs := open(ctx, t, newClient(), prefix, "observer", 10*time.Second)
	hasDoor := func(ins []protocol.ClusterInstance) bool {
		for _, in := range ins {
			if in.Name == "a" && in.FrontDoors["prime"].Address == "127.0.0.1:8000" {
				return true
			}
		}
		return false
	}
	waitFor(ctx, t, obs, "a with its front door", hasDoor)
	cli := newClient()
	before, err := cli.Get(ctx, Key(prefix, "a"))
	if err != nil || len(before.Kvs) != 1 {
		t.Fatalf("a's entry: %v, %v", before, err)
	}

	c.Member(0).Stop()
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("a did not notice its lease lost with etcd stopped")
	}
	if err := c.Member(0).Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-again:
	case <-ctx.Done():
		t.Fatal("a did not register its entry again once etcd was back")
	}
	after, err := cli.Get(ctx, Key(prefix, "a"))
	if err != nil || len(after.Kvs) != 1 || after.Kvs[0].Lease == before.Kvs[0].Lease {
		t.Fatalf("a's entry once etcd is back: %v, %v; want it on a new lease", after, err)
	}
	// Both sides work after the outage: a's change reaches the observer.
	a.SetFrontDoors(map[string]protocol.FrontDoorBinding{"prime": {Address: "127.0.0.1:8001"}})
	waitFor(ctx, t, obs, "a's front door moved after the outage", func(ins []protocol.ClusterInstance) bool {
		for _, in := range ins {
			if in.Name == "a" && in.FrontDoors["prime"].Address == "127.0.0.1:8001" {
				return true
			}
		}
		return false
	})
}
