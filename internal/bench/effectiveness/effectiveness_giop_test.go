package effectiveness

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// giopAddrs maps a GIOP group's replicas by the host:port of their
// references.
func TestGIOPAddrs(t *testing.T) {
	t.Parallel()
	ref := backend.NewGIOPPrime(backend.GIOPPrimeOptions{}).Reference("127.0.0.1", 9001).String()
	st := bench.GroupStatus{}
	st.Replicas = append(st.Replicas, struct {
		ID          string `json:"id"`
		Address     string `json:"address"`
		State       string `json:"state"`
		ReportAgeMS *int64 `json:"report_age_ms"`
		Counters    struct {
			Bindings   int64 `json:"bindings"`
			Rebinds    int64 `json:"rebinds"`
			Proxied    int64 `json:"proxied"`
			Redirected int64 `json:"redirected"`
			Failures   int64 `json:"failures"`
		} `json:"counters"`
	}{ID: "r-1", Address: ref})
	if m := giopAddrs(st); m["127.0.0.1:9001"] != "r-1" || len(m) != 1 {
		t.Errorf("giopAddrs = %v", m)
	}
}
