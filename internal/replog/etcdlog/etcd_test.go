package etcdlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestTwoInstancesShareDedupAndLease: two instances (clients) appending
// the same (session, seq) at once append it once; the session has one
// lease, which holds its dedup keys and its session key and never an
// entry; each entry key names its size.
func TestTwoInstancesShareDedupAndLease(t *testing.T) {
	prefix := newPrefix(t)
	a := openT(t, Options{Prefix: prefix, Group: "g", SessionTTL: 10 * time.Second})
	b := openT(t, Options{Prefix: prefix, Group: "g", SessionTTL: 10 * time.Second})
	const n = 10
	var wg sync.WaitGroup
	type res struct {
		pos     uint64
		existed bool
		err     error
	}
	out := make([]res, 2*n)
	for i := range 2 * n {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			var r res
			r.pos, r.existed, r.err = l.AppendOrGet(ctxT(t), replog.Append{Session: "c/1", Seq: uint64(i / 2), Payload: []byte(fmt.Sprint("p", i)), Origin: fmt.Sprint("inst", i%2)})
			out[i] = r
		})
	}
	wg.Wait()
	for s := range n {
		x, y := out[2*s], out[2*s+1]
		if x.err != nil || y.err != nil || x.pos != y.pos || x.existed == y.existed {
			t.Fatalf("seq %d from two instances: %+v and %+v, want one new and one existed at one position", s, x, y)
		}
	}
	cli := a.opts.Client
	k := newKeys(prefix, "g")
	sess, err := cli.Get(ctxT(t), k.session("c/1"))
	if err != nil || len(sess.Kvs) != 1 || sess.Kvs[0].Lease == 0 {
		t.Fatalf("session key: %v %v, want one key on a lease", sess, err)
	}
	lease := sess.Kvs[0].Lease
	if got := string(sess.Kvs[0].Value); got != strconv.FormatInt(lease, 16) {
		t.Errorf("session key's value %q, want its lease %x", got, lease)
	}
	dedup, err := cli.Get(ctxT(t), k.session("c/1")+"/", clientv3.WithPrefix())
	if err != nil || len(dedup.Kvs) != n {
		t.Fatalf("dedup keys: %d, %v; want %d", len(dedup.Kvs), err, n)
	}
	for _, kv := range dedup.Kvs {
		if kv.Lease != lease {
			t.Errorf("dedup key %s on lease %x, want the session's %x", kv.Key, kv.Lease, lease)
		}
	}
	entries, err := cli.Get(ctxT(t), k.log, clientv3.WithPrefix())
	if err != nil || len(entries.Kvs) != n {
		t.Fatalf("entries: %d, %v; want %d", len(entries.Kvs), err, n)
	}
	for _, kv := range entries.Kvs {
		if kv.Lease != 0 {
			t.Errorf("entry %s on lease %x, want none", kv.Key, kv.Lease)
		}
		if sizeOf(string(kv.Key)) != int64(len(kv.Value)) {
			t.Errorf("entry %s names size %d, holds %d bytes", kv.Key, sizeOf(string(kv.Key)), len(kv.Value))
		}
		if !strings.HasPrefix(string(kv.Key), prefix+"log/g/") {
			t.Errorf("entry key %s outside %slog/g/", kv.Key, prefix)
		}
	}
}

// TestWatchAfterCompaction: etcd's history compacted past the entries
// loses none of them: a watch from before the compaction lists them from
// their keys, then follows new ones.
func TestWatchAfterCompaction(t *testing.T) {
	l := openT(t, Options{Prefix: newPrefix(t), Group: "g"})
	var pos []uint64
	for i := range 5 {
		p, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: uint64(i), Payload: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	resp, err := l.cli.Get(ctxT(t), "compaction-marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.cli.Compact(ctxT(t), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []uint64
	for e, err := range l.Watch(ctx, pos[1]) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Position)
		if len(got) == 4 {
			if low, ok := l.LowestNeeded(); !ok || low != pos[4]+1 {
				t.Errorf("LowestNeeded = %d, %v while the watch waits after %d; want %d", low, ok, pos[4], pos[4]+1)
			}
			p, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 5, Payload: []byte{5}})
			if err != nil {
				t.Fatal(err)
			}
			pos = append(pos, p)
		}
		if len(got) == 5 {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(pos[1:]) {
		t.Fatalf("watch from %d after compaction: %v, want %v", pos[1], got, pos[1:])
	}
	if _, ok := l.LowestNeeded(); ok {
		t.Error("LowestNeeded reports a watch after it ended")
	}
}

// TestOptions: bad options are refused naming the field.
func TestOptions(t *testing.T) {
	cli := &clientv3.Client{}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no client", Options{Prefix: "/p/", Group: "g"}, "client"},
		{"prefix", Options{Client: cli, Prefix: "p", Group: "g"}, "prefix"},
		{"group", Options{Client: cli, Prefix: "/p/"}, "group"},
		{"ttl short", Options{Client: cli, Prefix: "/p/", Group: "g", SessionTTL: time.Second}, "session_ttl 1s"},
		{"ttl fraction", Options{Client: cli, Prefix: "/p/", Group: "g", SessionTTL: 2500 * time.Millisecond}, "whole seconds"},
		{"limits", Options{Client: cli, Prefix: "/p/", Group: "g", Limits: replog.Limits{MaxPayload: 10, MaxLogBytes: 5}}, "max_log_bytes 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Open(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestLeaseRevokedUnderTheCache: a session's lease that ends while this
// instance still holds it as fresh (revoked here; lapsed while etcd was
// away) takes its dedup keys with it; the next append of the session is
// refused by etcd for the unknown lease, and is tried again on a new
// lease, once, without the caller seeing it.
func TestLeaseRevokedUnderTheCache(t *testing.T) {
	l := openT(t, Options{Prefix: newPrefix(t), Group: "g", SessionTTL: time.Minute})
	p1, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 1, Payload: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := l.cli.Get(ctxT(t), l.k.session("s"))
	if err != nil || len(sess.Kvs) != 1 {
		t.Fatalf("session key: %v %v", sess, err)
	}
	old := clientv3.LeaseID(sess.Kvs[0].Lease)
	if _, err := l.cli.Revoke(ctxT(t), old); err != nil {
		t.Fatal(err)
	}
	p2, existed, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 1, Payload: []byte("b")})
	if err != nil || existed || p2 <= p1 {
		t.Fatalf("s/1 after its lease was revoked: %d %v %v, want a new entry above %d", p2, existed, err, p1)
	}
	sess, err = l.cli.Get(ctxT(t), l.k.session("s"))
	if err != nil || len(sess.Kvs) != 1 || clientv3.LeaseID(sess.Kvs[0].Lease) == old || sess.Kvs[0].Lease == 0 {
		t.Fatalf("session key after the new grant: %v %v, want a new lease", sess, err)
	}
	if p, existed, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 1}); err != nil || !existed || p != p2 {
		t.Fatalf("s/1 again: %d %v %v, want %d existed", p, existed, err, p2)
	}
}

// TestListPages: a watch that lists more entries than one page holds
// (max_payload 1 MiB: 16 a page) gets them all, in order, once.
func TestListPages(t *testing.T) {
	l := openT(t, Options{Prefix: newPrefix(t), Group: "g", Limits: replog.Limits{MaxPayload: 1 << 20}})
	if got := l.listPage(); got != 16 {
		t.Fatalf("page of %d entries with max_payload 1 MiB, want 16", got)
	}
	var pos []uint64
	for i := range 40 {
		p, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: uint64(i), Payload: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	var got []uint64
	for e, err := range l.Watch(ctxT(t), pos[3]) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Position)
		if len(got) == len(pos)-3 {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(pos[3:]) {
		t.Fatalf("watch over three pages: %v, want %v", got, pos[3:])
	}
}

// TestFollowCompacted: a watch of etcd from a revision compacted away
// asks for a list again (relist), neither an error nor silence.
func TestFollowCompacted(t *testing.T) {
	l := openT(t, Options{Prefix: newPrefix(t), Group: "g"})
	p, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 1, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 2, Payload: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	resp, err := l.cli.Get(ctxT(t), "compaction-marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.cli.Compact(ctxT(t), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	w := &watcher{next: p}
	relist, ok, err := l.follow(ctxT(t), w, int64(p), func(replog.Entry, error) bool {
		t.Error("follow yielded from a compacted revision")
		return false
	})
	if !relist || !ok || err != nil {
		t.Fatalf("follow from compacted revision %d: relist=%v ok=%v err=%v, want relist", p, relist, ok, err)
	}
}

// TestLowestNeededFollowsProgress: a watch that waits on a quiet group
// reports a lowest needed revision that moves on with etcd's (progress
// notifications), past changes elsewhere; not the position after its last
// entry.
func TestLowestNeededFollowsProgress(t *testing.T) {
	l := openT(t, Options{Prefix: newPrefix(t), Group: "g", ProgressEvery: 20 * time.Millisecond})
	p, _, err := l.AppendOrGet(ctxT(t), replog.Append{Session: "s", Seq: 1, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	got := make(chan uint64, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range l.Watch(ctx, p) {
			if err != nil {
				return
			}
			got <- e.Position
		}
	}()
	select {
	case pos := <-got:
		if pos != p {
			t.Fatalf("watch from %d delivered %d", p, pos)
		}
	case <-ctx.Done():
		t.Fatal("no entry")
	}
	other, err := l.cli.Put(ctxT(t), newPrefix(t)+"elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	want := uint64(other.Header.Revision) + 1
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		low, ok := l.LowestNeeded()
		if ok && low >= want {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("LowestNeeded = %d, %v; want at least %d (after a change elsewhere) once etcd reports progress", low, ok, want)
		case <-tick.C:
		}
	}
	cancel()
	<-done
}
