package replagent_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
)

// BenchmarkAgentApply measures the apply loop end to end on one core
// path: an entry taken from the stream, delivered to the real counter over
// loopback HTTP, its applied position written to bbolt (fsynced), its
// reply posted. b.N entries in a row.
func BenchmarkAgentApply(b *testing.B) {
	r := startReplica(b, "r1", replicaOpts{})
	wait(b, r.src.opened, "the stream")
	r.send(b, hello(0))
	go func() {
		for range b.N {
			<-r.admin.replies
		}
	}()
	b.ResetTimer()
	for i := range b.N {
		r.send(b, counterEntry(uint64(i+1), ""))
	}
	// The last entry is taken; wait until it is applied and stored.
	for r.agent.Applied() < uint64(b.N) {
		if _, body := get(b, r.listen.URL+"/fulcrum/replication/checkpoint"); len(body) == 0 {
			b.Fatal("empty checkpoint")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkStoreSetApplied measures what storing the applied position
// costs each entry: one bbolt transaction, fsynced.
func BenchmarkStoreSetApplied(b *testing.B) {
	st, err := replagent.OpenStore(b.TempDir(), "g")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for i := range b.N {
		if err := st.SetApplied(uint64(i + 1)); err != nil {
			b.Fatal(err)
		}
	}
}
