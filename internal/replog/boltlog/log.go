package boltlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// Log is one group's log in a DB. It implements replog.Log.
type Log struct {
	d      *DB
	name   string
	bucket []byte
	limits replog.Limits
	ttl    time.Duration

	closeOnce sync.Once
	closed    chan struct{}
}

var _ replog.Log = (*Log)(nil)

// Bucket and key names inside a group's bucket.
var (
	logBucket      = []byte("log")
	dedupBucket    = []byte("dedup")
	sessionsBucket = []byte("sessions")
	nextKey        = []byte("next")
	trimmedKey     = []byte("trimmed")
	bytesKey       = []byte("bytes")
)

// request is one AppendOrGet waiting for the committer.
type request struct {
	l    *Log
	a    replog.Append
	done chan struct{} // closed when pos, existed and err are set

	pos     uint64
	existed bool
	err     error
}

// AppendOrGet implements replog.Log. It returns once the transaction
// holding the append is committed and fsynced. When ctx ends first the
// append may or may not be committed (the error is ctx's).
func (l *Log) AppendOrGet(ctx context.Context, a replog.Append) (uint64, bool, error) {
	if err := l.limits.Check(a); err != nil {
		return 0, false, err
	}
	select {
	case <-l.closed:
		return 0, false, replog.ErrClosed
	default:
	}
	r := &request{l: l, a: a, done: make(chan struct{})}
	select {
	case l.d.reqs <- r:
	case <-l.closed:
		return 0, false, replog.ErrClosed
	case <-l.d.stop:
		return 0, false, replog.ErrClosed
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	select {
	case <-r.done:
		return r.pos, r.existed, r.err
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
}

// commitLoop commits the waiting requests in batches until Close; it
// replies to every request it took.
func (d *DB) commitLoop() {
	batch := make([]*request, 0, d.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case <-d.stop:
			return
		case r := <-d.reqs:
			batch = append(batch, r)
		}
	drain:
		for len(batch) < d.opts.MaxBatch {
			select {
			case r := <-d.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		d.commit(batch)
	}
}

// commit applies batch in one transaction and replies to each request.
func (d *DB) commit(batch []*request) {
	appended := false
	err := d.db.Update(func(tx *bolt.Tx) error {
		appended = false
		for _, r := range batch {
			r.pos, r.existed, r.err = r.l.applyLocked(tx, r.a)
			if r.err == nil && !r.existed {
				appended = true
			}
			if r.err != nil && !isRefusal(r.err) {
				return r.err // a bbolt error: nothing of the batch is kept
			}
		}
		return nil
	})
	for _, r := range batch {
		if err != nil {
			r.pos, r.existed, r.err = 0, false, fmt.Errorf("boltlog: append to group %q: %w", r.l.name, err)
		}
		close(r.done)
	}
	if err == nil && appended {
		d.notify()
	}
}

// isRefusal tells the errors that refuse one append from those that fail
// the transaction.
func isRefusal(err error) bool {
	_, ok := err.(*replog.LogFullError)
	return ok
}

// applyLocked appends a in tx, or finds its earlier position. Caller runs
// it inside the committer's transaction.
func (l *Log) applyLocked(tx *bolt.Tx, a replog.Append) (uint64, bool, error) {
	g, err := l.groupBucket(tx)
	if err != nil {
		return 0, false, err
	}
	now := l.d.clock.Now()
	sessions, dedup := g.Bucket(sessionsBucket), g.Bucket(dedupBucket)
	if last := sessions.Get([]byte(a.Session)); last != nil && l.expired(last, now) {
		if err := dropSession(sessions, dedup, a.Session); err != nil {
			return 0, false, err
		}
	}
	dk := dedupKey(a.Session, a.Seq)
	if v := dedup.Get(dk); len(v) == 8 {
		return binary.BigEndian.Uint64(v), true, sessions.Put([]byte(a.Session), u64(uint64(now.UnixNano())))
	}
	enc := replog.Encode(replog.Entry{Session: a.Session, Seq: a.Seq, Origin: a.Origin, Appended: now, Payload: a.Payload})
	used := getU64(g, bytesKey)
	if int64(used)+int64(len(enc)) > l.limits.MaxLogBytes {
		return 0, false, &replog.LogFullError{Size: len(enc), Bytes: int64(used), Max: l.limits.MaxLogBytes}
	}
	pos := getU64(g, nextKey)
	if pos == 0 {
		pos = 1
	}
	for _, kv := range []struct{ b, k, v []byte }{
		{logBucket, u64(pos), enc},
		{dedupBucket, dk, u64(pos)},
		{sessionsBucket, []byte(a.Session), u64(uint64(now.UnixNano()))},
		{nil, nextKey, u64(pos + 1)},
		{nil, bytesKey, u64(used + uint64(len(enc)))},
	} {
		b := g
		if kv.b != nil {
			b = g.Bucket(kv.b)
		}
		if err := b.Put(kv.k, kv.v); err != nil {
			return 0, false, err
		}
	}
	return pos, false, nil
}

// expired tells whether a session last used at last (Unix nanoseconds,
// 8 bytes) has expired at now.
func (l *Log) expired(last []byte, now time.Time) bool {
	if len(last) != 8 {
		return true
	}
	return !now.Before(time.Unix(0, int64(binary.BigEndian.Uint64(last))).Add(l.ttl))
}

// dropSession deletes a session and its dedup keys.
func dropSession(sessions, dedup *bolt.Bucket, session string) error {
	prefix := dedupPrefix(session)
	var keys [][]byte
	c := dedup.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := dedup.Delete(k); err != nil {
			return err
		}
	}
	return sessions.Delete([]byte(session))
}

// Sweep deletes the sessions expired at the clock's now, with their dedup
// keys, and returns how many it deleted.
func (l *Log) Sweep(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := l.d.db.Update(func(tx *bolt.Tx) error {
		n = 0
		g := tx.Bucket(l.bucket)
		if g == nil {
			return nil
		}
		now := l.d.clock.Now()
		sessions, dedup := g.Bucket(sessionsBucket), g.Bucket(dedupBucket)
		var gone []string
		if err := sessions.ForEach(func(k, v []byte) error {
			if l.expired(v, now) {
				gone = append(gone, string(k))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, s := range gone {
			if err := dropSession(sessions, dedup, s); err != nil {
				return err
			}
		}
		n = len(gone)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltlog: sweep group %q: %w", l.name, err)
	}
	return n, nil
}

// Trim implements replog.Log. A to beyond the last position is refused.
func (l *Log) Trim(ctx context.Context, to uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	changed := false
	err := l.d.db.Update(func(tx *bolt.Tx) error {
		changed = false
		g, err := l.groupBucket(tx)
		if err != nil {
			return err
		}
		trimmed, last := getU64(g, trimmedKey), max(getU64(g, nextKey), 1)-1
		if to <= trimmed {
			return nil
		}
		if to > last {
			return fmt.Errorf("trim to %d: beyond the last position %d", to, last)
		}
		lb := g.Bucket(logBucket)
		var keys [][]byte
		freed := uint64(0)
		c := lb.Cursor()
		for k, v := c.Seek(u64(trimmed + 1)); k != nil && len(k) == 8 && binary.BigEndian.Uint64(k) <= to; k, v = c.Next() {
			keys = append(keys, bytes.Clone(k))
			freed += uint64(len(v))
		}
		for _, k := range keys {
			if err := lb.Delete(k); err != nil {
				return err
			}
		}
		if err := g.Put(trimmedKey, u64(to)); err != nil {
			return err
		}
		changed = true
		return g.Put(bytesKey, u64(getU64(g, bytesKey)-min(freed, getU64(g, bytesKey))))
	})
	if err != nil {
		return fmt.Errorf("boltlog: group %q: %w", l.name, err)
	}
	if changed {
		l.d.notify()
	}
	return nil
}

// Close ends the log's watches with replog.ErrClosed; its appends are
// refused after it. The DB stays open.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.d.mu.Lock()
		delete(l.d.groups, l.name)
		l.d.mu.Unlock()
	})
	return nil
}

// groupBucket returns the group's bucket in a writable tx, creating it.
func (l *Log) groupBucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	g, err := tx.CreateBucketIfNotExists(l.bucket)
	if err != nil {
		return nil, err
	}
	for _, name := range [][]byte{logBucket, dedupBucket, sessionsBucket} {
		if _, err := g.CreateBucketIfNotExists(name); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func dedupPrefix(session string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(session)))
	return append(b, session...)
}

func dedupKey(session string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(dedupPrefix(session), seq)
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func getU64(b *bolt.Bucket, k []byte) uint64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
