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
