package boltlog

import (
	"path/filepath"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/replogtest"
)

// BenchmarkAppend8Clients: the target is at least 1,000 ordered
// requests/s with 8 concurrent clients on the single-node engine.
//
//	go test -run '^$' -bench Append -benchtime 5000x ./internal/replog/boltlog/
func BenchmarkAppend8Clients(b *testing.B) {
	db, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := db.Group("bench", GroupOptions{Limits: replog.Limits{MaxLogBytes: 1 << 40}})
	if err != nil {
		b.Fatal(err)
	}
	replogtest.BenchAppend(b, l, 8, 256)
}

// BenchmarkAppend1Client: one caller, one fsync per append.
func BenchmarkAppend1Client(b *testing.B) {
	db, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := db.Group("bench", GroupOptions{})
	if err != nil {
		b.Fatal(err)
	}
	replogtest.BenchAppend(b, l, 1, 256)
}
