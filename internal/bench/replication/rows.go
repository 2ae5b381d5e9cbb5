package replication

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// Configurations of a row.
const (
	configReplicated = "replicated"
	configDirect     = "direct"
	configPerRequest = "per-request"
	// configViaRelay: client → unreplicated relay → bridge → counters
	// (seed 001's set-up; callers.go).
	configViaRelay = "relay→bridge"
	// configCallers: client → bridge → replicated relays → one plain
	// deduplicating counter (replicated callers; callers.go).
	configCallers = "bridge→relays"
)

// ordered reports whether config's calls go through a replicated group's
// log: each answers a distinct value and counts as one request applied.
func ordered(config string) bool {
	return config == configReplicated || config == configViaRelay || config == configCallers
}

// bridged reports whether config's clients call a bridge, whose
// Server-Timing splits the RTT.
func bridged(config string) bool { return config == configReplicated || config == configCallers }

// row is one point: a configuration, a client kind, replicas and clients.
type row struct {
	Config   string `json:"config"`
	Kind     string `json:"kind"`
	Replicas int    `json:"replicas"`
	Clients  int    `json:"clients"`
	Calls    int    `json:"calls"`
	Measured int    `json:"measured"`
	Errors   int    `json:"errors"`
	// RTT over the measured calls of every client, in ms.
	RTTMeanMS float64 `json:"rtt_mean_ms"`
	RTTP50MS  float64 `json:"rtt_p50_ms"`
	RTTP99MS  float64 `json:"rtt_p99_ms"`
	// The split of a replicated call (p50s, ms): the log's append, the
	// wait for the first reply, and the rest (client→bridge and back).
	AppendP50MS float64 `json:"append_p50_ms"`
	WaitP50MS   float64 `json:"wait_p50_ms"`
	BridgeP50MS float64 `json:"client_bridge_p50_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summarise makes the row of one point from its clients' runs, leaving out
// each client's first discard calls. It fails on any client-visible
// error and, for the calls through a replicated group (ordered), on a
// value two calls got (a reply given to the wrong call, or a request
// applied twice); it returns the number of requests the replicated group
// applied.
func summarise(config, kind string, replicas, clients int, runs []clientRun, discard int) (row, int64, error) {
	rw := row{Config: config, Kind: kind, Replicas: replicas, Clients: clients}
	var rtt, app, wait, bridge []float64
	seen := map[int64]bool{}
	var applied int64
	for i, r := range runs {
		rw.Calls += r.calls
		rw.Errors += len(r.errors)
		if len(r.errors) > 0 {
			return rw, 0, fmt.Errorf("replication: %s, %d replicas, %d %s clients: client %d saw %d errors, first: %s", config, replicas, clients, kind, i, len(r.errors), r.errors[0])
		}
		for j, s := range r.samples {
			if ordered(config) {
				applied++
				if seen[s.value] {
					return rw, 0, fmt.Errorf("replication: %s, %d replicas, %d %s clients: two calls got the value %d", config, replicas, clients, kind, s.value)
				}
				seen[s.value] = true
			}
			if j < discard {
				continue
			}
			rtt = append(rtt, ms(s.rtt))
			if bridged(config) {
				app = append(app, ms(s.appendDur))
				wait = append(wait, ms(s.wait))
				bridge = append(bridge, ms(s.rtt-s.appendDur-s.wait))
			}
		}
	}
	rw.Measured = len(rtt)
	if len(rtt) == 0 {
		return rw, applied, fmt.Errorf("replication: %s, %d clients: no call measured", config, clients)
	}
	rw.RTTMeanMS, rw.RTTP50MS, rw.RTTP99MS = stats.Mean(rtt), stats.Quantile(rtt, 0.5), stats.Quantile(rtt, 0.99)
	if len(app) > 0 {
		rw.AppendP50MS, rw.WaitP50MS, rw.BridgeP50MS = stats.Quantile(app, 0.5), stats.Quantile(wait, 0.5), stats.Quantile(bridge, 0.5)
	}
	return rw, applied, nil
}

// checkInvariants checks that every live replica's counter equals the
// number of distinct requests the group applied (so each live replica
// holds the same state).
func (s *setup) checkInvariants(ctx context.Context, distinct int64) error {
	v, err := s.converged(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	if v != distinct {
		var vals []string
		for _, r := range s.live() {
			x, _ := s.value(ctx, r.url)
			vals = append(vals, fmt.Sprint(x))
		}
		return fmt.Errorf("replication: the live replicas' counters are %s, want %d (the distinct requests answered)", strings.Join(vals, ", "), distinct)
	}
	return nil
}

// throughput is the ordered requests per second of concurrent clients.
type throughput struct {
	Clients   int     `json:"clients"`
	Replicas  int     `json:"replicas"`
	DurationS float64 `json:"duration_s"`
	Calls     int64   `json:"calls"`
	RPS       float64 `json:"rps"`
	RTTP50MS  float64 `json:"rtt_p50_ms"`
}

// measureThroughput runs n protocol-aware clients as fast as they go for
// d.
func measureThroughput(ctx context.Context, set *setup, n int, d time.Duration) (throughput, error) {
	start := time.Now()
	runs := runClients(ctx, set.bal.FrontDoor(groupReplicated), aware, n, 1<<30, start.Add(d), "tp")
	elapsed := time.Since(start)
	tp := throughput{Clients: n, Replicas: len(set.live()), DurationS: elapsed.Seconds()}
	var rtt []float64
	for i, r := range runs {
		if len(r.errors) > 0 {
			return tp, fmt.Errorf("replication: throughput client %d saw %d errors, first: %s", i, len(r.errors), r.errors[0])
		}
		tp.Calls += int64(len(r.samples))
		for _, s := range r.samples {
			rtt = append(rtt, ms(s.rtt))
		}
	}
	tp.RPS = float64(tp.Calls) / elapsed.Seconds()
	if len(rtt) > 0 {
		tp.RTTP50MS = stats.Quantile(rtt, 0.5)
	}
	return tp, nil
}
