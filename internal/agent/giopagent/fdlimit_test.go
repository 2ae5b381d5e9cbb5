//go:build linux

package giopagent_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// An agent in front of a Prime servant, both run with RLIMIT_NOFILE 64 in
// a child process and flooded with connections until they run out of
// descriptors, serves again once they are closed: a real is_prime call
// through the agent gets its answer.
func TestAgentServesAfterRunningOutOfDescriptors(t *testing.T) {
	if proctest.FDLimitChild(t) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		target := backend.NewGIOPPrime(backend.GIOPPrimeOptions{Key: servantKey})
		go func() { _ = target.Serve(ln) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = target.Shutdown(ctx)
		})
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		_, addr := startAgent(t, giopagent.Options{Target: target.Reference("127.0.0.1", port)})
		fmt.Printf("addr=%s\n", addr)
		proctest.WaitStdin()
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, addr, flood := proctest.RunOutOfDescriptors(ctx, t, 64)
	t.Logf("the agent ran out of descriptors after %d connections", flood)

	rc := dialRaw(t, addr)
	rep := rc.call(rc.request(giop.V12, cdr.BigEndian, giop.OpIsPrime, 1_000_003))
	if ok, err := rep.BooleanResult(); err != nil || !ok {
		t.Fatalf("is_prime(1000003) through the agent after the flood = %v, %v; want true", ok, err)
	}
	proctest.EndFDLimitChild(ctx, t, p)
}
