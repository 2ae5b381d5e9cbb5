package boltlog

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
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
