package boltlog

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// TestSweepLoop: the DB's sweeper, on the system clock inside a synctest
// bubble, deletes a session idle for its TTL at the first tick after it
// expired, and not before.
func TestSweepLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	synctest.Test(t, func(t *testing.T) {
		db, err := Open(path, Options{SweepEvery: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		l, err := db.Group("g", GroupOptions{SessionTTL: 90 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.AppendOrGet(context.Background(), replog.Append{Session: "s", Seq: 1}); err != nil {
			t.Fatal(err)
		}
		stored := func() bool {
			var ok bool
			if err := db.db.View(func(tx *bolt.Tx) error {
				ok = tx.Bucket(l.bucket).Bucket(dedupBucket).Get(dedupKey("s", 1)) != nil
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		time.Sleep(time.Minute + time.Second) // the first tick: idle 61s of 90
		synctest.Wait()
		if !stored() {
			t.Fatal("swept at the first tick, before the session expired")
		}
		time.Sleep(time.Minute) // the second tick: idle 121s
		synctest.Wait()
		if stored() {
			t.Fatal("not swept at the first tick after the session expired")
		}
	})
}
