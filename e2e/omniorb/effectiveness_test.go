//go:build linux

package omniorb

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// TestOmniORBEffectiveness is the TAO paper's effectiveness experiment (§4.3)
// with omniORB on both sides: four omniORB C++ replicas, each behind
// "fulcrum agent giop" (load: its call rate), and eight unmodified omniORB
// C++ client processes on the group's corbaloc reference, four calling
// is_prime at 100 calls/s and four at 50, started 100 ms apart in
// interleaved order. For each strategy and binding the replicas' served
// rates are read each second from their call logs; the report gives them,
// the dispersion (coefficient of variation of the replicas' mean rates)
// over the steady window, the clients' moves and failed calls. The steady
// window is the run's second half, or the seconds after the last client
// move if that comes later; it must last at least minSteadySeconds, and
// the load-aware strategies must hold a dispersion of at most maxSteadyCV
// in it. A whole-client assignment can reach a dispersion of 0 (100+50 on
// each); round-robin's turns give 200, 100, 200, 100 (0.333), its
// baseline, not judged.
// Like TestOmniORBOverhead it is a measurement run by hand, with
// FULCRUM_OMNIORB_BENCH=1 under the bench lock; FULCRUM_OMNIORB_BENCH_SECONDS
// (default 20) sets each run's length.
func TestOmniORBEffectiveness(t *testing.T) {
	if os.Getenv("FULCRUM_OMNIORB_BENCH") != "1" {
		t.Skip("a measurement: set FULCRUM_OMNIORB_BENCH=1 (and run it under flock /tmp/fulcrum-bench.lock)")
	}
	o := needORBs(t)
	seconds := envInts(t, "FULCRUM_OMNIORB_BENCH_SECONDS", []int{20})[0]
	rates := []int{100, 50, 100, 50, 100, 50, 100, 50}
	runs := []struct {
		strategy, binding, report string
		unreported                bool
		judged                    bool // the steady CV must be at most maxSteadyCV
	}{
		// round-robin reads no load; a long report interval keeps one
		// snapshot, so that it hands the clients out in turn.
		{"round-robin", "per-session", "1h", true, false},
		{"least-loaded", "on-demand", "500ms", false, true},
		{"minimum-dispersion", "on-demand", "500ms", false, true},
	}
	var report strings.Builder
	for _, run := range runs {
		t.Run(run.strategy+"/"+run.binding, func(t *testing.T) {
			ctx := testContext(t, time.Duration(seconds)*time.Second+2*time.Minute)
			r := o.startRig(ctx, t, rigOpts{strategy: run.strategy, binding: run.binding, report: run.report, agents: true, replicas: 4, unreported: run.unreported})
			ps := make([]*proctest.Proc, len(rates))
			started := make([]time.Time, len(rates))
			for i, rate := range rates {
				if i > 0 {
					// Starts 100 ms apart, in a fixed order (round-robin's
					// assignment depends on it).
					<-time.After(100 * time.Millisecond)
				}
				started[i] = time.Now()
				ps[i] = o.startClient(t, cxxClient, "--calls", strconv.Itoa(rate*seconds), "--rate", strconv.Itoa(rate),
					"--per-call", "--arg", fmt.Sprint(5_000_000+i), r.corbaloc)
			}
			// The served calls of each replica, each second, from the last
			// client's start until the first client's end.
			var perSecond [][]int
			last := make([]int, len(r.servers))
			for j, s := range r.servers {
				last[j] = strings.Count(s.Stdout.String(), `{"op"`)
			}
			windowStart := time.Now()
			tick := time.NewTicker(time.Second)
			for range seconds - 1 {
				<-tick.C
				row := make([]int, len(r.servers))
				for j, s := range r.servers {
					n := strings.Count(s.Stdout.String(), `{"op"`)
					row[j], last[j] = n-last[j], n
				}
				perSecond = append(perSecond, row)
			}
			tick.Stop()
			moves, failed := 0, 0
			var lastMove time.Duration // after windowStart; 0 for none in the window
			for i, p := range ps {
				code, lines, sum := clientResult(ctx, t, cxxClient, p, nil)
				if code != 0 {
					t.Errorf("client %d: exit %d, %+v", i, code, sum)
				}
				failed += sum.Calls - sum.OK
				for _, l := range lines[1:] {
					if l.Sends > 1 {
						moves++
						// The clients pace their calls: call n is due
						// (n-1)/rate after the client's start.
						at := started[i].Add(time.Duration(l.Call-1) * time.Second / time.Duration(rates[i])).Sub(windowStart)
						lastMove = max(lastMove, at)
					}
				}
			}
			from := min(max(len(perSecond)/2, int(math.Ceil(lastMove.Seconds()))), len(perSecond))
			steady := perSecond[from:]
			means := make([]float64, len(r.servers))
			for _, row := range steady {
				for j, n := range row {
					means[j] += float64(n) / float64(len(steady))
				}
			}
			cv := coefficientOfVariation(means)
			fmt.Fprintf(&report, "%s/%s: served calls/s per replica, second by second:\n", run.strategy, run.binding)
			for sec, row := range perSecond {
				fmt.Fprintf(&report, "  %2d %s\n", sec+1, joinInts(row))
			}
			if len(steady) == 0 {
				fmt.Fprintf(&report, "  last move at %.1f s: no steady window; client moves %d; failed calls %d\n", lastMove.Seconds(), moves, failed)
			} else {
				fmt.Fprintf(&report, "  last move at %.1f s; steady from second %d: means %.1f, dispersion (CV) %.3f; client moves %d; failed calls %d\n",
					lastMove.Seconds(), from+1, means, cv, moves, failed)
			}
			if failed != 0 {
				t.Errorf("%d calls failed", failed)
			}
			if len(steady) < minSteadySeconds {
				t.Errorf("steady for %d s (last move at %.1f s of %d), want at least %d s", len(steady), lastMove.Seconds(), len(perSecond), minSteadySeconds)
			} else if run.judged && cv > maxSteadyCV {
				t.Errorf("steady dispersion (CV) %.3f over seconds %d-%d, want at most %.2f (means %.1f)", cv, from+1, len(perSecond), maxSteadyCV, means)
			}
		})
	}
	t.Logf("omniORB C++ replicas and clients, %d s per run:\n%s", seconds, report.String())
}

// The steady window's bounds: at least minSteadySeconds long, and a
// dispersion of at most maxSteadyCV for the load-aware strategies.
const (
	minSteadySeconds = 5
	maxSteadyCV      = 0.10
)

// coefficientOfVariation is the standard deviation of v over its mean.
func coefficientOfVariation(v []float64) float64 {
	var mean float64
	for _, x := range v {
		mean += x / float64(len(v))
	}
	if mean == 0 {
		return 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(v))) / mean
}
