package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopdeliver"
	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent/giopout"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
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

// startGIOPOutcalls serves "agent replicated --giop --giop-listen": the
// servant's outgoing GIOP calls, to --outcall-target through the agent
// (once it runs). It returns the server and the reference the servant
// calls its callee by.
func startGIOPOutcalls(f agentReplicatedFlags, agent *atomic.Pointer[replagent.Agent], log *slog.Logger) (*giopout.Server, ior.IOR, error) {
	call := func(ctx context.Context, c protocol.Outcall) (protocol.OutcallReply, error) {
		a := agent.Load()
		if a == nil {
			return protocol.OutcallReply{}, fmt.Errorf("%w: the agent is starting", giopout.ErrNoEntry)
		}
		r, err := a.Outcall(ctx, c)
		if errors.Is(err, replagent.ErrNoEntry) {
			err = fmt.Errorf("%w: %w", giopout.ErrNoEntry, err)
		}
		return r, err
	}
	s, err := giopout.New(f.outcallTarget, call, giopout.Options{Logger: log})
	if err != nil {
		return nil, ior.IOR{}, exitCode(2, fmt.Errorf("--outcall-target: %w", err))
	}
	ln, err := net.Listen("tcp", f.giopListen)
	if err != nil {
		return nil, ior.IOR{}, fmt.Errorf("--giop-listen: %w", err)
	}
	host, _, _ := net.SplitHostPort(f.giopListen) // checked: it names a host
	ref := s.Reference(host, uint16(ln.Addr().(*net.TCPAddr).Port))
	go func() {
		if err := s.Serve(ln); err != nil && !errors.Is(err, giopout.ErrClosed) {
			log.Error("the GIOP outcall listener failed", "err", err)
		}
	}()
	return s, ref, nil
}

// checkGIOPOutcalls checks --giop-listen, host:port with a host (the
// reference the servant is given names it), and --outcall-target, a
// reference with an IIOP profile.
func checkGIOPOutcalls(addr, target string) error {
	ref, err := ior.Parse(target)
	if err != nil {
		return fmt.Errorf("--outcall-target %q: %w", target, err)
	}
	if _, ok := ref.IIOP(); !ok {
		return fmt.Errorf("--outcall-target %q: no IIOP profile (TAG_INTERNET_IOP), want a corbaloc:iiop: URL or an IOR with one", target)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--giop-listen %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("--giop-listen %q: must name the host the servant reaches the agent at (like 127.0.0.1:%s), not an unspecified address: the reference given to the servant names it", addr, port)
	}
	return nil
}
