//go:build linux

package backend_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// A Prime servant run with RLIMIT_NOFILE 64 in a child process, flooded
// with connections until it runs out of descriptors, serves again once
// they are closed: a real is_prime call gets its answer.
func TestGIOPPrimeServesAfterRunningOutOfDescriptors(t *testing.T) {
	if proctest.FDLimitChild(t) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := backend.NewGIOPPrime(backend.GIOPPrimeOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		go func() { _ = s.Serve(ln) }()
		fmt.Printf("addr=%s\n", ln.Addr())
		proctest.WaitStdin()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, addr, flood := proctest.RunOutOfDescriptors(ctx, t, 64)
	t.Logf("the servant ran out of descriptors after %d connections", flood)
	callCtx, cancelCall := context.WithTimeout(ctx, 20*time.Second)
	defer cancelCall()

	o := newORB(t, orb.Options{})
	obj, err := o.Resolve("corbaloc:iiop:1.2@" + addr + "/" + backend.GIOPPrimeKey)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := orb.Prime{Object: obj}.IsPrime(callCtx, 1_000_003)
	if err != nil || !got {
		t.Fatalf("is_prime(1000003) after the flood = %v, %v; want true", got, err)
	}
	proctest.EndFDLimitChild(ctx, t, p)
}
