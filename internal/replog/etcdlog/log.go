package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// Log is one group's log in etcd. It implements replog.Log; safe for
// concurrent use.
type Log struct {
	cli  *clientv3.Client
	opts Options
	k    keys

	stopCtx context.Context // ended by Close
	stop    context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*sessionLease
	counted  bool      // bytes holds a count
	bytes    int64     // the log's bytes as last counted, plus this instance's appends since
	countAt  time.Time // when bytes was counted
	// recounting is set while an append counts the bytes again.
	recounting bool
	watchers   map[*watcher]struct{}
}

var _ replog.Log = (*Log)(nil)

// Open returns the log of o.Group. It reads nothing yet.
func Open(o Options) (*Log, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Log{
		cli: o.Client, opts: o, k: newKeys(o.Prefix, o.Group),
		stopCtx: ctx, stop: cancel,
		sessions: map[string]*sessionLease{}, watchers: map[*watcher]struct{}{},
	}, nil
}

// Close ends the log's watches with replog.ErrClosed and refuses calls
// after it. It revokes no lease: sessions outlive an instance, so that a
// retry through another instance is still deduplicated.
func (l *Log) Close() error {
	l.stop()
	return nil
}

// AppendOrGet implements replog.Log in one etcd transaction (doc.go).
func (l *Log) AppendOrGet(ctx context.Context, a replog.Append) (uint64, bool, error) {
	if err := l.opts.Limits.Check(a); err != nil {
		return 0, false, err
	}
	if l.stopCtx.Err() != nil {
		return 0, false, replog.ErrClosed
	}
	now := l.opts.Clock.Now()
	enc := replog.Encode(replog.Entry{Session: a.Session, Seq: a.Seq, Origin: a.Origin, Appended: now, Payload: a.Payload})
	dk := l.k.dedup(a.Session, a.Seq)
	used, err := l.used(ctx)
	if err != nil {
		return 0, false, l.wrap("append", err)
	}
	if used+int64(len(enc)) > l.opts.Limits.MaxLogBytes {
		// Full; a request appended already still gets its position.
		resp, err := l.cli.Get(ctx, dk)
		if err != nil {
			return 0, false, l.wrap("append", err)
		}
		if len(resp.Kvs) == 1 {
			return uint64(resp.Kvs[0].CreateRevision), true, nil
		}
		return 0, false, &replog.LogFullError{Size: len(enc), Bytes: used, Max: l.opts.Limits.MaxLogBytes}
	}
	for attempt := 0; ; attempt++ {
		lease, err := l.lease(ctx, a.Session)
		if err != nil {
			return 0, false, l.wrap("append", err)
		}
		resp, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(dk), "=", 0)).
			Then(clientv3.OpPut(l.k.entry(len(enc)), string(enc)), clientv3.OpPut(dk, "", clientv3.WithLease(lease))).
			Else(clientv3.OpGet(dk, clientv3.WithKeysOnly())).
			Commit()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && attempt == 0 {
			l.forgetLease(a.Session, lease) // lapsed since we last renewed it
			continue
		}
		if err != nil {
			return 0, false, l.wrap("append", err)
		}
		if resp.Succeeded {
			l.mu.Lock()
			l.bytes += int64(len(enc))
			l.mu.Unlock()
			return uint64(resp.Header.Revision), false, nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) != 1 {
			return 0, false, l.wrap("append", fmt.Errorf("dedup key %s: compare failed but read %d keys", dk, len(kvs)))
		}
		return uint64(kvs[0].CreateRevision), true, nil
	}
}

// used returns the log's bytes, counted again from the entries' keys
// when the count is RecountEvery old or a Trim made it stale.
func (l *Log) used(ctx context.Context) (int64, error) {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	if l.counted && (now.Sub(l.countAt) < l.opts.RecountEvery || l.recounting) {
		// Fresh, or another append is counting: that count is as good.
		defer l.mu.Unlock()
		return l.bytes, nil
	}
	l.recounting = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.recounting = false
		l.mu.Unlock()
	}()
	var total int64
	key, end := l.k.log, clientv3.GetPrefixRangeEnd(l.k.log)
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1000)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := l.cli.Get(ctx, key, opts...)
		if err != nil {
			return 0, err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			total += sizeOf(string(kv.Key))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bytes, l.countAt, l.counted = total, now, true
	return total, nil
}

// Trim implements replog.Log: it moves the trim point first (so that a
// watch needing a deleted entry ends with ErrTrimmed rather than miss
// it), then deletes the entries up to it in transactions of at most 100
// keys. A to above etcd's current revision is refused.
func (l *Log) Trim(ctx context.Context, to uint64) error {
	if l.stopCtx.Err() != nil {
		return replog.ErrClosed
	}
	for {
		resp, err := l.cli.Get(ctx, l.k.trimKey)
		if err != nil {
			return l.wrap("trim", err)
		}
		var cur uint64
		var modRev int64
		if len(resp.Kvs) == 1 {
			modRev = resp.Kvs[0].ModRevision
			if cur, err = strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64); err != nil {
				return l.wrap("trim", fmt.Errorf("trim point %q: %w", resp.Kvs[0].Value, err))
			}
		}
		if to <= cur {
			return nil
		}
		if to > uint64(resp.Header.Revision) {
			return l.wrap("trim", fmt.Errorf("trim to %d: beyond etcd's revision %d", to, resp.Header.Revision))
		}
		tr, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(l.k.trimKey), "=", modRev)).
			Then(clientv3.OpPut(l.k.trimKey, strconv.FormatUint(to, 10))).
			Commit()
		if err != nil {
			return l.wrap("trim", err)
		}
		if tr.Succeeded {
			break
		}
	}
	for {
		resp, err := l.cli.Get(ctx, l.k.log, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMaxModRev(int64(to)), clientv3.WithLimit(100))
		if err != nil {
			return l.wrap("trim", err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		ops := make([]clientv3.Op, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
		if _, err := l.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return l.wrap("trim", err)
		}
	}
	l.mu.Lock()
	l.counted = false
	l.mu.Unlock()
	return nil
}

func (l *Log) wrap(op string, err error) error {
	if l.stopCtx.Err() != nil && errors.Is(err, context.Canceled) {
		return replog.ErrClosed
	}
	return fmt.Errorf("etcdlog: group %q: %s: %w", l.opts.Group, op, err)
}
