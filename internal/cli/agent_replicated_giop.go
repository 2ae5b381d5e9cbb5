package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// newGIOPDeliverer is the deliverer of "agent replicated --giop": to the
// servant target names (an IOR or a corbaloc URL), once its address
// accepts connections (within wait).
func newGIOPDeliverer(ctx context.Context, target string, wait time.Duration) (replagent.Deliverer, error) {
	d, err := giopdeliver.New(target, giopdeliver.Options{})
	if err != nil {
		return nil, exitCode(2, fmt.Errorf("--target: %w", err))
	}
	ref, _ := ior.Parse(target) // parsed by New already
	p, _ := ref.IIOP()
	addr := net.JoinHostPort(p.Host, fmt.Sprint(p.Port))
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := (&net.Dialer{}).DialContext(wctx, "tcp", addr)
		if err == nil {
			c.Close()
			return giopStates{d}, nil
		}
		select {
		case <-wctx.Done():
			d.Close()
			return nil, fmt.Errorf("servant %s did not accept connections within %s: %w", addr, wait, err)
		case <-tick.C:
		}
	}
}

// giopStates is a giopdeliver.Deliverer whose servant's "no state" is
// replagent's (errors.Is(err, replagent.ErrNoState)).
type giopStates struct{ *giopdeliver.Deliverer }

func (g giopStates) State(ctx context.Context) ([]byte, error) {
	b, err := g.Deliverer.State(ctx)
	if errors.Is(err, giopdeliver.ErrNoState) {
		return nil, fmt.Errorf("%w: %w", replagent.ErrNoState, err)
	}
	return b, err
}
