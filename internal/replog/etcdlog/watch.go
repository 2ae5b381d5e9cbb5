package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// listPageBytes bounds one list transaction's response (by max_payload),
// listPageMax its number of entries.
const (
	listPageBytes = 16 << 20
	listPageMax   = 256
)

// listPage is how many entries one list transaction reads: at most
// listPageBytes of entries of max_payload, at least one.
func (l *Log) listPage() int64 {
	return min(listPageMax, max(1, listPageBytes/int64(l.opts.Limits.MaxPayload)))
}

// watcher is one running watch: next is the position it needs next;
// resume, while it follows etcd, the revision the etcd client would
// resume its watch from (after the last event or progress notification
// delivered; while it lists, after the last page's revision). Both
// guarded by Log.mu.
type watcher struct {
	next   uint64
	resume uint64
}

// Watch implements replog.Log: list, then watch etcd from the revision
// after the list; a compaction past the watch lists again (doc.go).
func (l *Log) Watch(ctx context.Context, from uint64) iter.Seq2[replog.Entry, error] {
	return func(yield func(replog.Entry, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(l.stopCtx, cancel)
		defer stop()
		w := &watcher{next: max(from, 1)}
		l.mu.Lock()
		l.watchers[w] = struct{}{}
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			delete(l.watchers, w)
			l.mu.Unlock()
		}()
		fail := func(err error) {
			switch {
			case l.stopCtx.Err() != nil:
				err = replog.ErrClosed
			case ctx.Err() != nil:
				err = ctx.Err()
			}
			yield(replog.Entry{}, err)
		}
		for {
			rev, ok, err := l.list(ctx, w, yield)
			if err != nil {
				fail(err)
				return
			}
			if !ok {
				return // the consumer stopped
			}
			relist, ok, err := l.follow(ctx, w, rev+1, yield)
			if err != nil {
				fail(err)
				return
			}
			if !ok {
				return
			}
			if !relist {
				fail(ctx.Err())
				return
			}
		}
	}
}

// list yields the entries from w.next on, in pages, each read in one
// transaction with the trim point, until a page is short; it returns the
// revision of that last read. ok is false when the consumer stopped.
func (l *Log) list(ctx context.Context, w *watcher, yield func(replog.Entry, error) bool) (rev int64, ok bool, err error) {
	for {
		next := l.nextOf(w)
		resp, err := l.cli.Txn(ctx).Then(
			clientv3.OpGet(l.k.trimKey),
			clientv3.OpGet(l.k.log, clientv3.WithPrefix(), clientv3.WithMinModRev(int64(next)),
				clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend), clientv3.WithLimit(l.listPage())),
		).Commit()
		if err != nil {
			return 0, false, l.wrap("watch", err)
		}
		// The watch follows from after the last page's revision: it needs
		// no history below this one's.
		l.setResume(w, uint64(resp.Header.Revision)+1)
		if tkvs := resp.Responses[0].GetResponseRange().GetKvs(); len(tkvs) == 1 {
			trimmed, err := strconv.ParseUint(string(tkvs[0].Value), 10, 64)
			if err != nil {
				return 0, false, l.wrap("watch", fmt.Errorf("trim point %q: %w", tkvs[0].Value, err))
			}
			if next <= trimmed {
				return 0, false, &replog.TrimmedError{From: next, TrimmedTo: trimmed}
			}
		}
		kvs := resp.Responses[1].GetResponseRange().GetKvs()
		for _, kv := range kvs {
			if ok, err := l.deliver(w, kv, yield); !ok || err != nil {
				return 0, ok, err
			}
		}
		if int64(len(kvs)) < l.listPage() {
			return resp.Header.Revision, true, nil
		}
	}
}

// follow watches etcd from rev and yields the entries put. It returns
// relist true when etcd's history was compacted past the watch (the
// caller lists again), and an error for any other end but ctx's. Every
// ProgressEvery it asks etcd for a progress notification, so that the
// watch's resume revision (LowestNeeded) moves on while the group is
// quiet.
func (l *Log) follow(ctx context.Context, w *watcher, rev int64, yield func(replog.Entry, error) bool) (relist, ok bool, err error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	l.setResume(w, uint64(rev))
	defer l.setResume(w, 0)
	wch := l.cli.Watch(wctx, l.k.log, clientv3.WithPrefix(), clientv3.WithRev(rev))
	tick := l.opts.Clock.NewTicker(l.opts.ProgressEvery)
	defer tick.Stop()
	for {
		var resp clientv3.WatchResponse
		select {
		case <-tick.C():
			// A context derived from the watch's keeps its stream's key.
			pctx, pcancel := context.WithTimeout(wctx, l.opts.ProgressEvery)
			_ = l.cli.RequestProgress(pctx) // a failure only leaves the resume revision behind
			pcancel()
			continue
		case r, open := <-wch:
			if !open {
				if err := ctx.Err(); err != nil {
					return false, true, err
				}
				return false, true, l.wrap("watch", errors.New("etcd ended the watch"))
			}
			resp = r
		}
		if resp.CompactRevision != 0 || errors.Is(resp.Err(), rpctypes.ErrCompacted) {
			return true, true, nil
		}
		if err := resp.Err(); err != nil {
			return false, true, l.wrap("watch", err)
		}
		for _, ev := range resp.Events {
			if ev.Type != mvccpb.PUT {
				continue // a trim's deletes
			}
			if ok, err := l.deliver(w, ev.Kv, yield); !ok || err != nil {
				return false, ok, err
			}
		}
		switch {
		case len(resp.Events) > 0:
			l.setResume(w, uint64(resp.Events[len(resp.Events)-1].Kv.ModRevision)+1)
		case resp.IsProgressNotify():
			l.setResume(w, uint64(resp.Header.Revision)+1)
		}
	}
}

// setResume sets w's resume revision: 0 (forget it), or a higher one.
func (l *Log) setResume(w *watcher, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rev == 0 || rev > w.resume {
		w.resume = rev
	}
}

// deliver yields the entry kv holds if it is at or after w.next. ok is
// false when the consumer stopped; err is a *replog.DecodeError.
func (l *Log) deliver(w *watcher, kv *mvccpb.KeyValue, yield func(replog.Entry, error) bool) (ok bool, err error) {
	pos := uint64(kv.ModRevision)
	if pos < l.nextOf(w) {
		return true, nil
	}
	e, err := replog.Decode(pos, kv.Value)
	if err != nil {
		return true, err
	}
	l.mu.Lock()
	w.next = pos + 1
	l.mu.Unlock()
	return yield(e, nil), nil
}

func (l *Log) nextOf(w *watcher) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return w.next
}

// LowestNeeded returns the lowest position a running watch of this log
// would read from etcd's history if its stream broke now, and false when
// none runs: while it lists, the revision after the last page it read
// (it follows from there); while it follows, the revision the etcd client
// would resume it from (after the last event or progress notification,
// which moves on while the group is quiet); never below the next position
// it needs. Compacting etcd at or below it costs the watches nothing;
// compacting above it makes them list again (no entry is lost: entries
// are keys until Trim).
func (l *Log) LowestNeeded() (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var low uint64
	found := false
	for w := range l.watchers {
		need := max(w.next, w.resume)
		if !found || need < low {
			low, found = need, true
		}
	}
	return low, found
}
