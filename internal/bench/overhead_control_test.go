package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// rounds5 is five rounds of 100 calls at the given latencies (µs), each
// round lasting 100 calls × its latency.
func rounds5(us ...float64) []LoadResult {
	var rs []LoadResult
	for _, u := range us {
		d := time.Duration(u * float64(time.Microsecond))
		rs = append(rs, constantRun(100, d, 100*d))
	}
	return rs
}

func TestOverheadControlIsReportedApartAndSetsPerSessionNoise(t *testing.T) {
	t.Parallel()
	direct := overheadConf(cfgDirect, rounds5(100, 200, 100, 150, 100)...)
	// The control's replica is 5% slower in every round; per-session is
	// 4% slower: within the A/A distance. The per-round spread of
	// per-session's ratios is zero, so without the control the noise
	// would be the 2% floor and the target missed.
	control := overheadConf(cfgControl, rounds5(105, 210, 105, 157.5, 105)...)
	control.control = true
	ps := overheadConf(cfgPerSession, rounds5(104, 208, 104, 156, 104)...)
	cfgs := []*overheadConfig{direct, ps, control}

	rows := overheadRows(cfgs)
	if len(rows) != 2 || rows[0].Name != cfgDirect || rows[1].Name != cfgPerSession {
		t.Fatalf("rows %+v, want direct and per-session only", rows)
	}
	c := overheadControl(cfgs)
	if c == nil || c.Name != cfgControl || math.Abs(*c.LatencyRatio-1.05) > 0.002 || math.Abs(*c.ThroughputRatio-1/1.05) > 0.002 {
		t.Fatalf("control %+v, want latency 1.05 and throughput 1/1.05 × direct", c)
	}
	if overheadControl(cfgs[:2]) != nil {
		t.Fatal("a control without a control configuration")
	}

	judge := func(cfgs []*overheadConfig) Target {
		rep := NewReport("x")
		byName := map[string]OverheadRow{}
		for _, r := range overheadRows(cfgs) {
			byName[r.Name] = r
		}
		judgeOverhead(rep, cfgs, byName)
		for _, tg := range rep.Targets() {
			if tg.Name == "per-session within noise of direct" {
				return tg
			}
		}
		t.Fatal("no per-session target")
		return Target{}
	}
	if tg := judge(cfgs); tg.Status != "met" || !strings.Contains(tg.Detail, "A/A control") {
		t.Errorf("with the control: %+v, want met against the A/A control's noise", tg)
	}
	if tg := judge(cfgs[:2]); tg.Status != "missed" || !strings.Contains(tg.Detail, "spread") {
		t.Errorf("without the control: %+v, want missed against the 2%% floor", tg)
	}
}
