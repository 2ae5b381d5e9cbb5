package replication

import (
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

func TestCheckRefusesFlagsItCannotRunWith(t *testing.T) {
	for _, tc := range []struct {
		r    Replication
		want string
	}{
		{Replication{Invocations: -1}, "--invocations -1, must be positive"},
		{Replication{Invocations: 10, Discard: 10}, "--discard 10, must be below --invocations (10)"},
		{Replication{Replicas: 1}, "--replicas 1, must be in [2, 16]"},
		{Replication{FaultInvocations: 3}, "--fault-invocations 3, must be at least 4"},
		{Replication{Throughput: -time.Second}, "--throughput -1s"},
	} {
		err := tc.r.Check(bench.Quick)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want %q", tc.r, err, tc.want)
		}
	}
	if err := (&Replication{}).Check(bench.Smoke); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestServerTiming(t *testing.T) {
	a, w := serverTiming("append;dur=0.250, wait;desc=\"first reply\";dur=1.5, other;dur=9")
	if a != 250*time.Microsecond || w != 1500*time.Microsecond {
		t.Fatalf("serverTiming = %v, %v", a, w)
	}
	if a, w := serverTiming("append;dur=x"); a != 0 || w != 0 {
		t.Fatalf("bad duration read as %v, %v", a, w)
	}
}

func TestSummariseFailsOnAValueTwoCallsGot(t *testing.T) {
	runs := []clientRun{
		{calls: 2, samples: []sample{{rtt: time.Millisecond, value: 1}, {rtt: time.Millisecond, value: 2}}},
		{calls: 1, samples: []sample{{rtt: time.Millisecond, value: 2}}},
	}
	if _, _, err := summarise(configReplicated, aware, 2, 2, runs, 0); err == nil || !strings.Contains(err.Error(), "two calls got the value 2") {
		t.Fatalf("summarise: %v", err)
	}
	runs[1].samples[0].value = 3
	rw, applied, err := summarise(configReplicated, aware, 2, 2, runs, 1)
	if err != nil || applied != 3 || rw.Measured != 1 || rw.Calls != 3 {
		t.Fatalf("summarise = %+v, %d, %v", rw, applied, err)
	}
	runs[0].errors = []string{"status 503"}
	if _, _, err := summarise(configReplicated, aware, 2, 2, runs, 0); err == nil || !strings.Contains(err.Error(), "saw 1 errors") {
		t.Fatalf("summarise with an error: %v", err)
	}
}

// The two other topologies count as ordered calls (distinct values, each
// one request applied); only the one whose clients call a bridge takes
// the bridge's split.
func TestSummariseTheOtherTopologies(t *testing.T) {
	runs := []clientRun{{calls: 2, samples: []sample{
		{rtt: 4 * time.Millisecond, appendDur: time.Millisecond, wait: 2 * time.Millisecond, value: 1},
		{rtt: 4 * time.Millisecond, appendDur: time.Millisecond, wait: 2 * time.Millisecond, value: 3},
	}}}
	rw, applied, err := summarise(configCallers, aware, 2, 1, runs, 0)
	if err != nil || applied != 2 || rw.AppendP50MS != 1 || rw.WaitP50MS != 2 || rw.BridgeP50MS != 1 {
		t.Fatalf("summarise(%s) = %+v, %d, %v; want 2 applied and the split 1/2/1", configCallers, rw, applied, err)
	}
	rw, applied, err = summarise(configViaRelay, plain, 2, 1, runs, 0)
	if err != nil || applied != 2 || rw.AppendP50MS != 0 || rw.WaitP50MS != 0 {
		t.Fatalf("summarise(%s) = %+v, %d, %v; want 2 applied and no split", configViaRelay, rw, applied, err)
	}
	runs[0].samples[1].value = 1
	if _, _, err := summarise(configViaRelay, plain, 2, 1, runs, 0); err == nil || !strings.Contains(err.Error(), "two calls got the value 1") {
		t.Fatalf("summarise(%s) with a value two calls got: %v", configViaRelay, err)
	}
	if _, applied, err := summarise(configDirect, plain, 1, 1, runs, 0); err != nil || applied != 0 {
		t.Fatalf("summarise(%s) = %d, %v; want nothing applied to the group and no value check", configDirect, applied, err)
	}
}
