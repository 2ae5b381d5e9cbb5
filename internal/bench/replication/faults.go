package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

// injection is one of seed 001's fault-injection points: a failpoint of
// the failpoint binary and the process it is armed in.
type injection struct {
	// Point is seed 001's number (6: the bridge, fulcrum's own).
	Point int
	// What happens, in the report's words.
	What string
	// Failpoint is the gofail name.
	Failpoint string
	// InAgent arms it in the first replica's agent rather than its
	// counter.
	InAgent bool
}

// injections are the points a single-node run can inject. Point 6 (the
// bridge dies between appending and answering) needs a second instance
// for the client to go to: it is tested in cluster mode by the e2e tests.
var injections = []injection{
	{1, "the server dies after reading a request, before replying", "counterHTTPBeforeReply", false},
	{2, "the agent dies while writing a request to its server", "replAgentWritingRequest", true},
	{3, "the agent dies while reading its server's reply", "replAgentReadingReply", true},
	{4, "the agent dies before taking the next entry from the log", "replAgentBeforeTake", true},
	{5, "the agent dies after taking an entry, before delivering it", "replAgentBeforeDeliver", true},
}

// faultPoint is what the runs of one injection point measured.
type faultPoint struct {
	injection
	Runs int `json:"runs"`
	// Errors are client-visible errors over every run (the target is 0).
	Errors int `json:"errors"`
	// Killed counts the runs in which the failpoint did kill its process.
	Killed int `json:"killed"`
	// BaseP50MS is the median RTT of the runs' calls; FaultMS the mean
	// over runs of the longest RTT of the calls from the fault on, and
	// IncreaseMS their difference (seed 001 Fig. 6's "RTT increase").
	BaseP50MS  float64 `json:"base_p50_ms"`
	FaultMS    float64 `json:"fault_ms"`
	IncreaseMS float64 `json:"increase_ms"`
}

// measureFaults runs every injection point runs times: a fresh balancer
// and 2 replicas from the failpoint binary, one protocol-aware client
// making s.FaultInvocations calls, the failpoint armed to fire on its
// evaluation at the middle call.
func measureFaults(ctx context.Context, env *bench.Env, bin string, s settings) ([]faultPoint, error) {
	var out []faultPoint
	half := s.FaultInvocations / 2
	for _, in := range injections {
		fp := faultPoint{injection: in, Runs: s.Runs}
		var base, worst []float64
		for run := range s.Runs {
			set, err := start(ctx, env, bin, 1, 2, false)
			if err != nil {
				return nil, err
			}
			// The second replica carries the failpoint: it fires on its
			// half-th evaluation (gofail's "N*off->term").
			armed := []string{failpoint.Env(map[string]string{in.Failpoint: failpoint.Nth(half)})}
			r, err := set.addArmed(ctx, armed, in.InAgent)
			if err == nil {
				err = set.waitReplicas(ctx)
			}
			if err != nil {
				set.stop()
				return nil, fmt.Errorf("replication: fault point %d run %d: %w", in.Point, run+1, err)
			}
			runs := runClients(ctx, set.bal.FrontDoor(groupReplicated), aware, 1, s.FaultInvocations, time.Time{}, fmt.Sprintf("f%d-%d", in.Point, run))
			cr := runs[0]
			fp.Errors += len(cr.errors)
			killed := r.exited()
			if killed {
				fp.Killed++
			}
			var rtts []float64
			longest := 0.0
			for i, smp := range cr.samples {
				rtts = append(rtts, ms(smp.rtt))
				if i >= half-1 && ms(smp.rtt) > longest {
					longest = ms(smp.rtt)
				}
			}
			if len(rtts) > 0 {
				base = append(base, stats.Quantile(rtts, 0.5))
				worst = append(worst, longest)
			}
			var ierr error
			if len(cr.errors) == 0 {
				ierr = set.checkInvariants(ctx, int64(len(cr.samples)))
			}
			set.stop()
			if ierr != nil {
				return nil, fmt.Errorf("replication: fault point %d run %d: %w", in.Point, run+1, ierr)
			}
			env.Logf("fault point %d run %d: %d errors, failpoint fired: %v, longest RTT from the fault on %.1f ms", in.Point, run+1, len(cr.errors), killed, longest)
		}
		if len(base) > 0 {
			fp.BaseP50MS, fp.FaultMS = stats.Mean(base), stats.Mean(worst)
			fp.IncreaseMS = fp.FaultMS - fp.BaseP50MS
		}
		out = append(out, fp)
	}
	return out, nil
}

// addArmed adds a replica whose agent (inAgent) or counter runs with the
// environment armed.
func (s *setup) addArmed(ctx context.Context, armed []string, inAgent bool) (*replica, error) {
	if inAgent {
		return s.addReplicaEnv(ctx, nil, armed)
	}
	return s.addReplicaEnv(ctx, armed, nil)
}

// exited reports whether the replica's counter or agent has exited.
func (r *replica) exited() bool {
	select {
	case <-r.proc.Exited():
		return true
	case <-r.agent.Exited():
		return true
	default:
		return false
	}
}
