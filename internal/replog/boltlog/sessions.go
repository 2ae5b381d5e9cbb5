package boltlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
