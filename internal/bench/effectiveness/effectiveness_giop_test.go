package effectiveness

import (
	"github.com/fulcrum-lb/fulcrum/protocol"
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
	st.Replicas = append(st.Replicas, protocol.ReplicaStatus{ID: "r-1", Address: ref})
	if m := giopAddrs(st); m["127.0.0.1:9001"] != "r-1" || len(m) != 1 {
		t.Errorf("giopAddrs = %v", m)
	}
}
