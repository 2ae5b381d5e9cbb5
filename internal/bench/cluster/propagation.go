package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// propagationGroups is how many groups the registrations are spread over,
// so that no group's GET grows long.
const propagationGroups = 5

// Propagation is the propagation phase's result: from the 201 of a
// registration at one instance to the replica active in the next
// instance's GET (A→B, B→C, C→A in turn), polled without pause.
type Propagation struct {
	Registrations int     `json:"registrations"`
	P50MS         float64 `json:"p50_ms"`
	P99MS         float64 `json:"p99_ms"`
	MaxMS         float64 `json:"max_ms"`
	MeanMS        float64 `json:"mean_ms"`
}

// measurePropagation registers n replicas (addresses nothing listens on,
// in per-request groups without health checks) and times each one's
// propagation.
func measurePropagation(ctx context.Context, ins []*instance, n int) (Propagation, error) {
	for g := range propagationGroups {
		if _, err := createGroup(ctx, ins[0], ins, fmt.Sprintf("propagation-%d", g), map[string]any{"binding": "per-request"}); err != nil {
			return Propagation{}, err
		}
	}
	var took []float64
	for i := range n {
		at, seen := ins[i%len(ins)], ins[(i+1)%len(ins)]
		group := fmt.Sprintf("propagation-%d", i%propagationGroups)
		reg, err := register(ctx, at, group, fmt.Sprintf("http://127.0.2.%d:%d", 1+i%250, 20000+i))
		if err != nil {
			return Propagation{}, err
		}
		start := time.Now()
		if err := waitReplicaActive(ctx, seen, group, reg.ID); err != nil {
			return Propagation{}, err
		}
		took = append(took, float64(time.Since(start))/float64(time.Millisecond))
	}
	slices.Sort(took)
	return Propagation{
		Registrations: n, P50MS: stats.Quantile(took, 0.50), P99MS: stats.Quantile(took, 0.99),
		MaxMS: took[len(took)-1], MeanMS: stats.Mean(took),
	}, nil
}

// waitReplicaActive polls in's GET of group, without pause, until replica
// id is active in it.
func waitReplicaActive(ctx context.Context, in *instance, group, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		st, err := in.group(ctx, group)
		if err == nil {
			for _, r := range st.Replicas {
				if r.ID == id && r.State == "active" {
					return nil
				}
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("cluster: replica %s of %s not active at %s within 10s (%v)", id, group, in.name, err)
		}
	}
}
