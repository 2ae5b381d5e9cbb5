package tcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// startFulcrum starts "fulcrum serve" with one tcp group before the
// replicas: round robin, the replicas static members probed by connect,
// its connection cap above the idle connections. It returns once a byte
// sent through the front door comes back.
func startFulcrum(ctx context.Context, env *bench.Env, replicas []string, maxConn int) (*arm, error) {
	b, err := env.StartBalancer(ctx, bench.GroupSpec{
		Name: "tcp", Binding: protocol.PerRequest, Strategy: "round-robin", Protocol: protocol.ProtocolTCP,
		Replicas: replicas, Extra: fmt.Sprintf("    tcp: {max_connections: %d}\n", maxConn),
	})
	if err != nil {
		return nil, err
	}
	if err := b.WaitReady(ctx, "tcp", len(replicas), false); err != nil {
		return nil, err
	}
	addr := hostPort(b.FrontDoor("tcp"))
	if err := waitEcho(ctx, b.Proc, addr, 20*time.Second); err != nil {
		return nil, err
	}
	env.Logf("fulcrum tcp front door: %s", addr)
	return &arm{name: ArmFulcrum, addrs: []string{addr}, proc: b.Proc}, nil
}

// hostPort strips a scheme, if any, from a front door's advertised
// address.
func hostPort(advertise string) string {
	if _, rest, ok := strings.Cut(advertise, "://"); ok {
		return rest
	}
	return advertise
}
