package replogtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// BenchAppend measures AppendOrGet on l from clients concurrent callers
// (each its own session, fresh seqs, payload bytes each) over b.N appends
// in all, and reports appends/s and the p50 and p99 latency of one
// append in milliseconds.
func BenchAppend(b *testing.B, l replog.Log, clients, payload int) {
	body := make([]byte, payload)
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			s := fmt.Sprint("bench-", c)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t0 := time.Now()
				if _, _, err := l.AppendOrGet(ctx, replog.Append{Session: s, Seq: uint64(i), Payload: body, Origin: "bench"}); err != nil {
					b.Error(err)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "appends/s")
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
