package etcdlog

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/replogtest"
)

// BenchmarkAppend8Clients: appends to a one-member etcd on loopback from
// 8 concurrent callers.
//
//	go test -run '^$' -bench Append -benchtime 3000x ./internal/replog/etcdlog/
func BenchmarkAppend8Clients(b *testing.B) {
	l := openT(b, Options{Prefix: newPrefix(b), Group: "bench", Limits: replog.Limits{MaxLogBytes: 1 << 40}})
	replogtest.BenchAppend(b, l, 8, 256)
}

// BenchmarkAppend1Client: one caller.
func BenchmarkAppend1Client(b *testing.B) {
	l := openT(b, Options{Prefix: newPrefix(b), Group: "bench"})
	replogtest.BenchAppend(b, l, 1, 256)
}
