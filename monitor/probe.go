package monitor

import (
	"encoding/json"
	"math/bits"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The load probe (strategy prequal): the balancer GETs protocol.ProbePath
// and reads how many calls the replica has in flight and how long its
// calls take at about that many. Prequal (Wydrowski et al., NSDI 2024)
// has each server estimate its latency from its recently finished queries
// at the current load; the monitor keeps the last latencySamples calls
// with the calls in flight when each started and answers the median of
// those that started in the same power-of-two bucket of in-flight calls
// as now (at least minBucketSamples of them), else the median of all.

// latencySamples is how many recent calls the estimate looks at.
const latencySamples = 64

// minBucketSamples is how many calls of the current in-flight bucket the
// estimate needs before it uses them alone.
const minBucketSamples = 4

// rifBits is how many low bits of a sample hold the in-flight count.
const rifBits = 20

// latencyRing holds the latest calls' latency and in-flight count at
// their start, packed (latency in µs above rifBits, the count below).
// Writers and readers take no lock; a reader may see a sample being
// overwritten, which only changes which recent call it counts.
type latencyRing struct {
	next  atomic.Uint64
	slots [latencySamples]atomic.Uint64
}

// add records a call of latency d that started with rif calls in flight
// (itself included).
func (r *latencyRing) add(d time.Duration, rif int64) {
	us := uint64(max(d, 0) / time.Microsecond)
	us = min(us, 1<<(64-rifBits)-1)
	c := uint64(min(max(rif, 0), 1<<rifBits-1))
	i := (r.next.Add(1) - 1) % latencySamples
	r.slots[i].Store(us<<rifBits | c)
}

// estimate is the latency estimate in milliseconds at rif calls in
// flight; 0 before any call.
func (r *latencyRing) estimate(rif int64) float64 {
	n := int(min(r.next.Load(), latencySamples))
	if n == 0 {
		return 0
	}
	var all, same [latencySamples]uint64
	na, ns := 0, 0
	bucket := bits.Len64(uint64(max(rif, 0)))
	for i := range n {
		v := r.slots[i].Load()
		us := v >> rifBits
		all[na] = us
		na++
		if bits.Len64(v&(1<<rifBits-1)) == bucket {
			same[ns] = us
			ns++
		}
	}
	pick := all[:na]
	if ns >= minBucketSamples {
		pick = same[:ns]
	}
	slices.Sort(pick)
	return float64(pick[len(pick)/2]) / 1000
}

// LoadProbe returns the answer to a load probe now: the calls in flight
// and the latency estimate. Agents that answer probes themselves use it.
func (m *Monitor) LoadProbe() protocol.LoadProbe {
	rif := m.inflight.Load()
	// The calls in flight include the one a new call would join; estimate
	// at one more, as a new call would start.
	return protocol.LoadProbe{RIF: rif, LatencyMS: m.latencies.estimate(rif + 1)}
}

// serveLoadProbe answers a load probe. It is not a call: it is not
// counted, measured or sent back.
func (m *Monitor) serveLoadProbe(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "load probes are GET requests")
		return
	}
	body, _ := json.Marshal(m.LoadProbe())
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
