package boltlog

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// watchBatch is how many entries one read transaction takes.
const watchBatch = 256

// Watch implements replog.Log: it reads the file from its next position
// in short read transactions, and waits for the committer's notice when
// it has read everything.
func (l *Log) Watch(ctx context.Context, from uint64) iter.Seq2[replog.Entry, error] {
	return func(yield func(replog.Entry, error) bool) {
		next := max(from, 1)
		for {
			changed := l.d.changes() // before the read: no commit after it is missed
			entries, err := l.read(next)
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
				next = e.Position + 1
			}
			if err != nil {
				select {
				case <-l.d.stop:
					err = replog.ErrClosed // the file closed under the read
				default:
				}
				yield(replog.Entry{}, err)
				return
			}
			if len(entries) > 0 {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				yield(replog.Entry{}, ctx.Err())
				return
			case <-l.closed:
				yield(replog.Entry{}, replog.ErrClosed)
				return
			case <-l.d.stop:
				yield(replog.Entry{}, replog.ErrClosed)
				return
			}
		}
	}
}

// read returns up to watchBatch entries from next on, and the error that
// stops the watch after them (trimmed, undecodable, the file's).
func (l *Log) read(next uint64) ([]replog.Entry, error) {
	var out []replog.Entry
	var stop error
	err := l.d.db.View(func(tx *bolt.Tx) error {
		out, stop = out[:0], nil
		g := tx.Bucket(l.bucket)
		if g == nil {
			return nil
		}
		if trimmed := getU64(g, trimmedKey); next <= trimmed {
			stop = &replog.TrimmedError{From: next, TrimmedTo: trimmed}
			return nil
		}
		c := g.Bucket(logBucket).Cursor()
		want := next
		for k, v := c.Seek(u64(next)); k != nil && len(out) < watchBatch; k, v = c.Next() {
			if len(k) != 8 {
				stop = &replog.DecodeError{Position: want, Err: fmt.Errorf("key %x is not a position", k)}
				return nil
			}
			pos := binary.BigEndian.Uint64(k)
			if pos != want {
				// Positions are dense: a gap is damage, never skipped.
				stop = &replog.DecodeError{Position: want, Err: fmt.Errorf("missing (next stored is %d)", pos)}
				return nil
			}
			e, err := replog.Decode(pos, v)
			if err != nil {
				stop = err
				return nil
			}
			out = append(out, e)
			want++
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("boltlog: watch group %q: %w", l.name, err)
	}
	return out, stop
}
