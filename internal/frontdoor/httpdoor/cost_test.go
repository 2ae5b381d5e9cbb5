package httpdoor

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestRequestFactsParseFulcrumCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		header     string // "" for none
		cost, size float64
	}{
		{"none", "", 0, 0},
		{"both", "cpu=0.004, data=10240", 0.004, 10240},
		{"semicolons and spaces", " data = 5 ;cpu=2e-3 ", 0.002, 5},
		{"bare number is cpu", "30000", 30000, 0},
		{"case", "CPU=1, Data=2", 1, 2},
		{"data only", "data=7", 0, 7},
		{"negative ignored", "cpu=-1, data=3", 0, 3},
		{"not a number ignored", "cpu=lots, data=NaN", 0, 0},
		{"infinity ignored", "cpu=+Inf", 0, 0},
		{"unknown key ignored", "disk=3, cpu=1", 1, 0},
		{"empty parts", ",,cpu=1,", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/count/30000?x=1", nil)
			if tt.header != "" {
				r.Header.Set(protocol.HeaderCost, tt.header)
			}
			var req strategy.Request
			requestFacts(r, &req)
			if req.Path != "/count/30000" || req.Cost != tt.cost || req.Size != tt.size {
				t.Errorf("got path %q cost %v size %v, want /count/30000, %v, %v", req.Path, req.Cost, req.Size, tt.cost, tt.size)
			}
		})
	}
}

func TestRequestFactsDoNotAllocate(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/count/7", nil)
	r.Header.Set(protocol.HeaderCost, "cpu=0.004, Data=10240")
	var req strategy.Request
	if n := testing.AllocsPerRun(1000, func() { requestFacts(r, &req) }); n != 0 {
		t.Errorf("requestFacts allocates %v times", n)
	}
}

// recordingPicker hands every request it is asked to pick for to a
// channel, and picks the first replica.
type recordingPicker struct {
	reps []*strategy.Replica
	seen chan strategy.Request
}

func (p *recordingPicker) Pick(r *strategy.Request) (*strategy.Replica, error) {
	p.seen <- *r
	return p.reps[0], nil
}

// testPicksSeeTheCallsCost: both front door modes give the strategy the
// path and the Fulcrum-Cost hint.
func testPicksSeeTheCallsCost(t *testing.T, engine string) {
	t.Parallel()
	for _, binding := range []string{protocol.OnDemand, protocol.PerRequest} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			rp := startReplica(t, "r1", "", nil)
			seen := make(chan strategy.Request, 4)
			g := newTestGroup(groupConfig{binding: binding, members: []spec{rp.spec()},
				picker: func(reps []*strategy.Replica) strategy.Picker { return &recordingPicker{reps: reps, seen: seen} }})
			fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
			req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodGet, fd.url+"/count/30000?n=1", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(protocol.HeaderCost, "cpu=0.03, data=512")
			resp, err := noFollow(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := recv(t, seen, "a pick")
			if got.Path != "/count/30000" || got.Cost != 0.03 || got.Size != 512 {
				t.Errorf("the picker saw %+v, want path /count/30000, cost 0.03, size 512", got)
			}
		})
	}
}
