package bench

import (
	"strings"
	"testing"
	"time"
)

// A closed-loop client's summary becomes a LoadResult: every latency,
// the failed calls, the batch's time.
func TestOmniSummaryResult(t *testing.T) {
	s := omniSummary{Calls: 4, OK: 3, ElapsedUs: 2000, Errors: map[string]int64{"TRANSIENT": 1}, Latencies: []int64{100, 200, 300}}
	res := s.result()
	if res.Rec.Count() != 3 || res.Errors != 1 || res.Elapsed != 2*time.Millisecond || res.FirstError != "CORBA TRANSIENT" {
		t.Errorf("%+v", res)
	}
	if f := res.Figures(); f.ThroughputRPS != 1500 || f.Mean != 200 {
		t.Errorf("figures %+v, want 1500 calls/s, mean 200 µs", f)
	}
}

// --orb is go or omniorb, and omniorb needs --protocol giop.
func TestOptionsORB(t *testing.T) {
	for _, c := range []struct {
		o   Options
		err string
	}{
		{Options{}, ""},
		{Options{Protocol: ProtocolGIOP, ORB: ORBOmniORB}, ""},
		{Options{ORB: ORBOmniORB}, `needs --protocol "giop"`},
		{Options{Protocol: ProtocolGIOP, ORB: "tao"}, `--orb "tao": must be "go" or "omniorb"`},
	} {
		err := c.o.validate()
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.err)
		}
	}
	o := Options{}
	_ = o.validate()
	if o.ORB != ORBGo {
		t.Errorf("default ORB %q, want %q", o.ORB, ORBGo)
	}
}
