//go:build linux

package giopdoor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A balancer with a per-request GIOP group and its replica, run with
// RLIMIT_NOFILE 64 in a child process and flooded with connections until
// the front door runs out of descriptors, serves again once they are
// closed: a real is_prime call through the front door gets its answer.
func TestFrontDoorServesAfterRunningOutOfDescriptors(t *testing.T) {
	if proctest.FDLimitChild(t) {
		b := newBalancer(t)
		ref := startPrime(t)
		addr := giopGroup(t, b, protocol.Group{Binding: protocol.PerRequest})
		register(t, b, "g", ref.String())
		fmt.Printf("addr=%s\n", addr)
		proctest.WaitStdin()
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, addr, flood := proctest.RunOutOfDescriptors(ctx, t, 64)
	t.Logf("the balancer ran out of descriptors after %d connections", flood)

	c := dial(t, addr)
	c.send(isPrimeRequest(giop.V12, cdr.BigEndian, 7, "g", 1_000_003))
	rep, ok := c.recv().(*giop.Reply)
	if !ok || rep.RequestID != 7 || rep.Status != giop.StatusNoException {
		t.Fatalf("answer after the flood: %+v, want the reply to request 7", rep)
	}
	if yes, err := rep.BooleanResult(); err != nil || !yes {
		t.Fatalf("is_prime(1000003) after the flood = %v, %v; want true", yes, err)
	}
	proctest.EndFDLimitChild(ctx, t, p)
}
