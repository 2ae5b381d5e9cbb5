package compaction

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/etcdlog"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// TestWatchesSurviveCompaction: each of fulcrum's etcd watches, its
// client on member 0 only, has its stream broken (member 0 killed) while
// the others change what it watches and compact etcd; when member 0 is
// back, the watch resumes and nothing is lost.
func TestWatchesSurviveCompaction(t *testing.T) {
	etcdtest.Need(t)
	c := etcdtest.New(t, etcdtest.Options{Members: 3})
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, *etcdtest.Cluster)
	}{
		{"ReplicationLogAboveItsNeed", testLogAboveNeed},
		{"StoreAtItsNeed", testStoreAtNeed},
		{"DirectoryAboveItsNeed", testDirectoryAboveNeed},
		{"ElectionsAboveTheirNeed", testElectionsAboveNeed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { whole(t, c) })
			tt.fn(t, c)
		})
	}
}

// whole starts the members a test stopped and waits for the cluster.
func whole(t *testing.T, c *etcdtest.Cluster) {
	for _, m := range c.Members() {
		if !m.Running() {
			if err := m.Start(); err != nil {
				t.Error(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.StartTimeout)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Error(err)
	}
	if t.Failed() {
		for _, m := range c.Members() {
			t.Log(m.LogTail())
		}
	}
}

// outage kills member 0, runs change on the others (which returns the
// revision to compact to), compacts there, and starts member 0 again.
func outage(ctx context.Context, t *testing.T, c *etcdtest.Cluster, change func() int64) {
	t.Helper()
	m0 := c.Member(0)
	m0.Kill()
	if err := c.WaitHealthy(ctx); err != nil { // m0 may have led
		t.Fatal(err)
	}
	others := newClient(t, c.Member(1).ClientURL, c.Member(2).ClientURL)
	rev := change()
	if _, err := others.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// A member serves its clients once it has applied the log up to its
	// return, the compaction included.
	if err := m0.Start(); err != nil {
		t.Fatal(err)
	}
}

// testLogAboveNeed: a group's log watch, compacted above what it needs
// (etcd's revision after the entries appended meanwhile), lists them
// again from their keys: every entry once, in order.
func testLogAboveNeed(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxT(t, 60*time.Second)
	prefix := newPrefix(t)
	open := func(cli *clientv3.Client) *etcdlog.Log {
		l, err := etcdlog.Open(etcdlog.Options{Client: cli, Prefix: prefix, Group: "g", ProgressEvery: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	l0 := open(newClient(t, c.Member(0).ClientURL))
	lo := open(newClient(t, c.Member(1).ClientURL, c.Member(2).ClientURL))
	var want []uint64
	appendTo := func(l *etcdlog.Log, n int) {
		for range n {
			p, _, err := l.AppendOrGet(ctx, replog.Append{Session: "s", Seq: uint64(len(want)), Payload: []byte(fmt.Sprint(len(want)))})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p)
		}
	}
	appendTo(l0, 2)
	got := make(chan uint64, 16)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		for e, err := range l0.Watch(wctx, want[0]) {
			if err != nil {
				done <- err
				return
			}
			got <- e.Position
		}
		done <- nil
	}()
	defer func() { cancel(); <-done }()
	recv := func(n int) []uint64 {
		t.Helper()
		var out []uint64
		for range n {
			select {
			case p := <-got:
				out = append(out, p)
			case err := <-done:
				t.Fatalf("watch ended: %v", err)
			case <-ctx.Done():
				t.Fatalf("watch delivered %v, then nothing", out)
			}
		}
		return out
	}
	if first := recv(2); !slices.Equal(first, want) {
		t.Fatalf("watch delivered %v, want %v", first, want)
	}
	low, ok := l0.LowestNeeded()
	if !ok || low <= want[1] {
		t.Fatalf("LowestNeeded = %d, %v while the watch waits after %d", low, ok, want[1])
	}
	outage(ctx, t, c, func() int64 {
		appendTo(lo, 3)
		return int64(want[len(want)-1]) // above low: the watch's history is gone
	})
	if rest := recv(3); !slices.Equal(rest, want[2:]) {
		t.Fatalf("after the compaction the watch delivered %v, want %v", rest, want[2:])
	}
	appendTo(lo, 1)
	if last := recv(1); last[0] != want[len(want)-1] {
		t.Fatalf("then %v, want %d", last, want[len(want)-1])
	}
}

// testStoreAtNeed: the store's watch, compacted at the revision it
// publishes (LowestNeeded, moved past a change elsewhere by a progress
// notification), resumes from history: no ErrCompacted, the change made
// meanwhile delivered.
func testStoreAtNeed(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxT(t, 60*time.Second)
	prefix := newPrefix(t)
	openStore := func(eps ...string) *etcdstore.Store {
		s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: eps, Prefix: prefix, ProbeInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s0 := openStore(c.Member(0).ClientURL)
	so := openStore(c.Member(1).ClientURL, c.Member(2).ClientURL)
	put := func(s *etcdstore.Store, key string) int64 {
		_, rev, _, err := s.Txn(ctx, nil, []store.Op{store.Put(key, []byte("v"))})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	r1 := put(s0, "g/a")
	ch, err := s0.Watch(ctx, "g/", r1)
	if err != nil {
		t.Fatal(err)
	}
	recv := func() store.WatchResponse {
		select {
		case r := <-ch:
			return r
		case <-ctx.Done():
			t.Fatal("no watch response")
			return store.WatchResponse{}
		}
	}
	if r := recv(); r.Err != nil || r.Rev != r1 {
		t.Fatalf("first response %+v, want the put at %d", r, r1)
	}
	elsewhere, err := newClient(t, c.Member(1).ClientURL).Put(ctx, newPrefix(t)+"x", "v")
	if err != nil {
		t.Fatal(err)
	}
	var low int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for low <= elsewhere.Header.Revision {
		var ok bool
		if low, ok = s0.LowestNeeded(); !ok {
			t.Fatal("LowestNeeded: no watch")
		}
		select {
		case <-ctx.Done():
			t.Fatalf("LowestNeeded = %d, not past %d", low, elsewhere.Header.Revision)
		case <-tick.C:
		}
	}
	var r2 int64
	outage(ctx, t, c, func() int64 {
		r2 = put(so, "g/b")
		return low
	})
	if r := recv(); r.Err != nil || r.Rev != r2 || len(r.Events) != 1 || r.Events[0].KV.Key != "g/b" {
		t.Fatalf("after compacting at %d (its need): %+v, want the put of g/b at %d", low, r, r2)
	}
}

// testDirectoryAboveNeed: the instance directory's watch, compacted above
// what it read, lists the directory again: an instance registered
// meanwhile is seen, and one gone meanwhile is forgotten.
func testDirectoryAboveNeed(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxT(t, 60*time.Second)
	prefix := newPrefix(t)
	cli0 := newClient(t, c.Member(0).ClientURL)
	clio := newClient(t, c.Member(1).ClientURL, c.Member(2).ClientURL)
	obs := openDir(ctx, t, cli0, prefix, "observer", 30*time.Second)
	gone := openDir(ctx, t, clio, prefix, "gone", 10*time.Second)
	awaitView(ctx, t, obs, "observer sees gone", func(n []string) bool { return slices.Contains(n, "gone") })
	outage(ctx, t, c, func() int64 {
		if err := gone.Close(ctx); err != nil {
			t.Fatal(err)
		}
		openDir(ctx, t, clio, prefix, "new", 10*time.Second)
		resp, err := clio.Get(ctx, prefix+"instances/new")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	})
	awaitView(ctx, t, obs, "observer after the compaction", func(n []string) bool {
		return slices.Equal(n, []string{"new", "observer"})
	})
}

// testElectionsAboveNeed: the leader election's watch of every group's
// leader, compacted above what it read, lists the elections again: a
// leader elected meanwhile is seen.
func testElectionsAboveNeed(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxT(t, 60*time.Second)
	prefix := newPrefix(t)
	newElector := func(cli *clientv3.Client, name string) *leader.Elector {
		e, err := leader.New(leader.Options{Client: cli, Prefix: prefix, Instance: name, SessionTTL: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		return e
	}
	obs := newElector(newClient(t, c.Member(0).ClientURL), "observer")
	clio := newClient(t, c.Member(1).ClientURL, c.Member(2).ClientURL)
	before := newElector(clio, "before")
	if err := before.Join("g1", time.Second); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	await := func(what string, ok func(map[string]string) bool) {
		t.Helper()
		for !ok(obs.Leaders()) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the observer sees leaders %v", what, obs.Leaders())
			case <-tick.C:
			}
		}
	}
	await("g1 led", func(l map[string]string) bool { return l["g1"] == "before" })
	outage(ctx, t, c, func() int64 {
		during := newElector(clio, "during")
		if err := during.Join("g2", time.Second); err != nil {
			t.Fatal(err)
		}
		for st, _ := during.Status("g2"); st.State != leader.Leader; st, _ = during.Status("g2") {
			select {
			case <-ctx.Done():
				t.Fatal("during never led g2")
			case <-tick.C:
			}
		}
		resp, err := clio.Get(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	})
	await("g2 led after the compaction", func(l map[string]string) bool { return l["g1"] == "before" && l["g2"] == "during" })
}
