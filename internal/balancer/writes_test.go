package balancer_test

import (
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestRacingWritesLandInMemoryOrder drains and activates a replica from
// many goroutines at once: the store is written after the group lock is
// released, and what it holds at the end must be the state the balancer
// holds in memory (the last change made, not the last write to finish).
func TestRacingWritesLandInMemoryOrder(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		e := newEnv(t, envOptions{noStart: true})
		e.mustPutGroup(protocol.Group{Name: "race", ReportInterval: ms(20)})
		a := e.mustRegister("race", "http://127.0.0.1:9401")
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for j := range 20 {
					var err error
					if (i+j)%2 == 0 {
						err = e.b.Drain("race", a.ID)
					} else {
						err = e.b.Activate("race", a.ID)
					}
					if err != nil {
						t.Errorf("drain/activate: %v", err)
					}
				}
			})
		}
		wg.Wait()
		inMemory := replicaOf(t, e.mustGroup("race"), a.ID).State
		e2 := e.reopen(envOptions{noStart: true})
		if stored := replicaOf(t, e2.mustGroup("race"), a.ID).State; stored != inMemory {
			t.Fatalf("round %d: the store holds %s, memory held %s", round, stored, inMemory)
		}
		e2.close()
	}
}
