package etcdstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// TestCluster runs a three-member etcd cluster and fails its members one
// after another; each step leaves the cluster whole again.
func TestCluster(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{Members: 3})
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, *etcdtest.Cluster)
	}{
		{"LeaderKilled", testLeaderKilled},
		{"QuorumLostEndsWatch", testQuorumLostEndsWatch},
		{"ResumedWatchCompacted", testResumedWatchCompacted},
		{"AllStopped", testAllStopped},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { whole(t, c) })
			tt.fn(t, c)
		})
	}
}

// whole starts the members a test stopped and waits for the cluster to be
// healthy; on failure it logs the members' logs.
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

func openCluster(t *testing.T, endpoints []string, dial time.Duration) *Store {
	t.Helper()
	s, err := Open(ctxT(t), Options{Endpoints: endpoints, Prefix: newPrefix(t), DialTimeout: dial})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recvT reads the next response of a watch, within the test's time.
func recvT(t *testing.T, ch <-chan store.WatchResponse) store.WatchResponse {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return r
	case <-ctxT(t).Done():
		t.Fatal("no watch response")
	}
	return store.WatchResponse{}
}

// leader is the member that leads the cluster.
func leader(t *testing.T, s *Store, c *etcdtest.Cluster) *etcdtest.Member {
	t.Helper()
	for _, m := range c.Members() {
		st, err := s.Client().Status(ctxT(t), m.ClientURL)
		if err != nil {
			t.Fatalf("status of %s: %v", m.Name, err)
		}
		if st.Leader == st.Header.MemberId {
			return m
		}
	}
	t.Fatal("no member leads")
	return nil
}

// testLeaderKilled: kill -9 of etcd's leader; the store, given every
// endpoint, keeps working, and a watch opened before goes on delivering.
func testLeaderKilled(t *testing.T, c *etcdtest.Cluster) {
	s := openCluster(t, c.Endpoints(), 5*time.Second)
	r1 := put(t, s, "g/a", "1")
	ch, err := s.Watch(ctxT(t), "g/", r1+1)
	if err != nil {
		t.Fatal(err)
	}
	killed := leader(t, s, c)
	killed.Kill()
	// A write proposed to the killed leader is lost with it and fails at
	// etcd's request timeout ("possibly due to previous leader failure");
	// writes after the election commit.
	if err := c.WaitHealthy(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	r2 := put(t, s, "g/a", "2")
	if r := recvT(t, ch); r.Err != nil || r.Rev != r2 || string(r.Events[0].KV.Value) != "2" {
		t.Fatalf("watch after the leader's kill: %+v, want the put of 2 at %d", r, r2)
	}
	if ok, _, _, err := s.Txn(ctxT(t), []store.Cond{store.ModRevIs("g/a", r2)}, []store.Op{store.Put("g/a", []byte("3"))}); err != nil || !ok {
		t.Fatalf("CAS with the leader killed = %v, %v", ok, err)
	}
	if kvs, _, err := s.List(ctxT(t), "g/"); err != nil || len(kvs) != 1 || string(kvs[0].Value) != "3" {
		t.Fatalf("List with the leader killed = %+v, %v", kvs, err)
	}
}

// testQuorumLostEndsWatch: a watch on a member that loses its quorum ends
// with an error naming etcd (not silence), so that its caller lists again
// once etcd is back.
func testQuorumLostEndsWatch(t *testing.T, c *etcdtest.Cluster) {
	m0 := c.Member(0)
	s := openCluster(t, []string{m0.ClientURL}, 5*time.Second)
	ch, err := s.Watch(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Member(1).Stop()
	c.Member(2).Stop()
	r := recvT(t, ch)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "etcd at "+m0.ClientURL) {
		t.Fatalf("watch after losing the quorum: %+v; want an error naming etcd", r)
	}
	if _, ok := <-ch; ok {
		t.Fatal("watch delivered after its error")
	}
	whole(t, c)
	_, rev, err := s.List(ctxT(t), "")
	if err != nil {
		t.Fatalf("List once etcd is back: %v", err)
	}
	ch, err = s.Watch(ctxT(t), "", rev+1)
	if err != nil {
		t.Fatal(err)
	}
	r2 := put(t, s, "k", "v")
	if r := recvT(t, ch); r.Err != nil || r.Rev != r2 {
		t.Fatalf("watch again: %+v, want the put at %d", r, r2)
	}
}

// testAllStopped: with every member stopped, each operation fails within
// the dial timeout with an error naming etcd and its endpoints; once the
// members are back, the same store works again.
func testAllStopped(t *testing.T, c *etcdtest.Cluster) {
	const dial = time.Second
	s := openCluster(t, c.Endpoints(), dial)
	put(t, s, "k", "1")
	for _, m := range c.Members() {
		m.Stop()
	}
	eps := strings.Join(c.Endpoints(), ",")
	ops := map[string]func(ctx context.Context) error{
		"Get":  func(ctx context.Context) error { _, err := s.Get(ctx, "k"); return err },
		"List": func(ctx context.Context) error { _, _, err := s.List(ctx, ""); return err },
		"Txn": func(ctx context.Context) error {
			_, _, _, err := s.Txn(ctx, nil, []store.Op{store.Put("k", []byte("2"))})
			return err
		},
		"Watch": func(ctx context.Context) error { _, err := s.Watch(ctx, "", 0); return err },
	}
	var wg sync.WaitGroup
	for name, op := range ops {
		wg.Go(func() {
			start := time.Now()
			err := op(ctxT(t))
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "etcd at "+eps) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s with etcd stopped = %v; want a timeout naming etcd at %s", name, err, eps)
			}
			if took > dial+time.Second {
				t.Errorf("%s with etcd stopped took %v, want about the dial timeout %v", name, took, dial)
			}
		})
	}
	wg.Wait()
	// Open itself fails within the dial timeout, naming etcd.
	start := time.Now()
	_, err := Open(ctxT(t), Options{Endpoints: c.Endpoints(), DialTimeout: dial})
	if err == nil || !strings.Contains(err.Error(), "etcd at "+eps) || time.Since(start) > dial+time.Second {
		t.Errorf("Open with etcd stopped = %v after %v; want an error naming etcd within %v", err, time.Since(start), dial)
	}
	whole(t, c)
	for name, op := range ops {
		if err := op(ctxT(t)); err != nil {
			t.Errorf("%s once etcd is back: %v", name, err)
		}
	}
	if kv, err := s.Get(ctxT(t), "k"); err != nil || string(kv.Value) != "2" {
		t.Fatalf("k once etcd is back = %+v, %v; want 2", kv, err)
	}
}

// testResumedWatchCompacted: a watch whose member is killed resumes when
// the member is back, from where it was; if the history from there was
// compacted meanwhile, it ends with ErrCompacted (never a silent gap), and
// listing again and watching from the list's revision + 1 goes on.
func testResumedWatchCompacted(t *testing.T, c *etcdtest.Cluster) {
	m0 := c.Member(0)
	s := openCluster(t, []string{m0.ClientURL}, 5*time.Second)
	others := openCluster(t, []string{c.Member(1).ClientURL, c.Member(2).ClientURL}, 5*time.Second)
	others.opts.Prefix, others.kvPrefix = s.opts.Prefix, s.kvPrefix // the same keys
	r1 := put(t, s, "g/a", "1")
	ch, err := s.Watch(ctxT(t), "g/", r1)
	if err != nil {
		t.Fatal(err)
	}
	if r := recvT(t, ch); r.Rev != r1 {
		t.Fatalf("first response %+v, want the put at %d", r, r1)
	}
	m0.Kill()
	// m0 may have led: write once the others have elected.
	if err := c.WaitHealthy(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	put(t, others, "g/a", "2")
	r3 := put(t, others, "g/b", "3")
	if _, err := others.Client().Compact(ctxT(t), r3); err != nil {
		t.Fatal(err)
	}
	// A member serves clients only once it has applied the log up to its
	// return, the compaction included: the resumed watch is compacted.
	if err := m0.Start(); err != nil {
		t.Fatal(err)
	}
	r := recvT(t, ch)
	if !errors.Is(r.Err, store.ErrCompacted) || !strings.Contains(r.Err.Error(), "etcd at "+m0.ClientURL) {
		t.Fatalf("resumed watch: %+v; want ErrCompacted naming etcd", r)
	}
	if _, ok := <-ch; ok {
		t.Fatal("watch delivered after its error")
	}
	kvs, rev, err := s.List(ctxT(t), "g/")
	if err != nil || len(kvs) != 2 || string(kvs[0].Value) != "2" {
		t.Fatalf("List after the compaction = %+v, %v", kvs, err)
	}
	ch, err = s.Watch(ctxT(t), "g/", rev+1)
	if err != nil {
		t.Fatal(err)
	}
	r4 := put(t, s, "g/c", "4")
	if r := recvT(t, ch); r.Err != nil || r.Rev != r4 {
		t.Fatalf("watch after relisting: %+v, want the put at %d", r, r4)
	}
}
