package boltlog

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/replogtest"
)

// testTTL is the session TTL of the suite's logs (on a manual clock).
const testTTL = time.Minute

// opened is what the harness knows of a log it opened.
type opened struct {
	path  string
	clock *clocktest.Manual
	lim   replog.Limits
	db    *DB
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	logs := map[replog.Log]*opened{}
	open := func(t *testing.T, o *opened) replog.Log {
		db, err := Open(o.path, Options{Clock: o.clock})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		l, err := db.Group("g", GroupOptions{Limits: o.lim, SessionTTL: testTTL})
		if err != nil {
			t.Fatalf("Group: %v", err)
		}
		o.db = db
		mu.Lock()
		logs[l] = o
		mu.Unlock()
		return l
	}
	get := func(l replog.Log) *opened {
		mu.Lock()
		defer mu.Unlock()
		return logs[l]
	}
	replogtest.Run(t, replogtest.Harness{
		Open: func(t *testing.T, lim replog.Limits) replog.Log {
			return open(t, &opened{path: filepath.Join(t.TempDir(), FileName), clock: clocktest.New(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)), lim: lim})
		},
		Reopen: func(t *testing.T, l replog.Log) replog.Log {
			o := get(l)
			if err := o.db.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, &opened{path: o.path, clock: o.clock, lim: o.lim})
		},
		Expire: func(t *testing.T, l replog.Log, session string) {
			get(l).clock.Advance(testTTL)
		},
		Garbage: func(t *testing.T, l replog.Log) uint64 {
			bl := l.(*Log)
			var pos uint64
			err := bl.d.db.Update(func(tx *bolt.Tx) error {
				g, err := bl.groupBucket(tx)
				if err != nil {
					return err
				}
				pos = max(getU64(g, nextKey), 1)
				if err := g.Bucket(logBucket).Put(u64(pos), []byte{0xee, 1, 2}); err != nil {
					return err
				}
				return g.Put(nextKey, u64(pos+1))
			})
			if err != nil {
				t.Fatal(err)
			}
			return pos
		},
	})
}
