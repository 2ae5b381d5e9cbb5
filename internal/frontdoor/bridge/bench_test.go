package bridge

import (
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkOrdered measures ordered calls through the bridge: 8
// concurrent protocol-aware clients (4 per GOMAXPROCS on 2 cores) calling
// POST /increment on a group of 2 counters over the bbolt log, each call
// appended (fsync), delivered to both replicas by the in-test agents and
// answered with the first reply.
//
//	go test -run '^$' -bench Ordered -benchtime 2000x ./internal/frontdoor/bridge/
func BenchmarkOrdered(b *testing.B) {
	e := newEnv(b, envConfig{replicas: 2})
	var clients atomic.Int64
	b.SetParallelism(max(1, 8/ncpu()))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := "bench-" + strconv.FormatInt(clients.Add(1), 10)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		var seq uint64
		for pb.Next() {
			seq++
			a, err := e.try(c, http.MethodPost, "/increment", session(id, seq), nil)
			if err != nil || a.status != http.StatusOK {
				b.Errorf("call: %v %d %s", err, a.status, a.body)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func ncpu() int { return runtime.GOMAXPROCS(0) }
