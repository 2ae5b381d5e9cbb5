package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
)

// GIOP runs of the bench: the replicas are "fulcrum backend prime --giop"
// (the Go Prime servant, its monitor built in when it joins a group), the
// groups have protocol giop, and the callers are fulcrum's client ORB
// (internal/giop/orb) calling is_prime through the replica's IOR or the
// group's corbaloc reference, following LOCATION_FORWARD as any ORB does.

// GIOPCall is what a GIOP caller calls: is_prime(N) on Ref.
type GIOPCall struct {
	// Ref is an "IOR:" or "corbaloc:iiop:" reference.
	Ref string
	// N is the argument of is_prime.
	N int32
}

// HTTPOnly is why the HAProxy and NGINX rows of a GIOP run are skipped.
const HTTPOnly = "HTTP-only competitor: HAProxy and NGINX do not balance GIOP calls (no LOCATION_FORWARD, no request routing)"

// giopCaller is one GIOP caller: an ORB of its own (one connection per
// endpoint) and the object it calls. err is why it could not be made (a
// bad reference): every call fails with it.
type giopCaller struct {
	orb *orb.ORB
	obj orb.Prime
	n   int32
	err error
}

func newGIOPCaller(c GIOPCall) (*giopCaller, error) {
	o, err := orb.New(orb.Options{})
	if err != nil {
		return nil, err
	}
	obj, err := o.Resolve(c.Ref)
	if err != nil {
		_ = o.Close()
		return nil, err
	}
	return &giopCaller{orb: o, obj: orb.Prime{Object: obj}, n: c.N}, nil
}

// call makes one is_prime call.
func (g *giopCaller) call(ctx context.Context) error {
	if g.err != nil {
		return g.err
	}
	_, _, err := g.obj.IsPrime(ctx, g.n)
	return err
}

func (g *giopCaller) close() {
	if g.orb != nil {
		_ = g.orb.Close()
	}
}

// name is what an endpoint is called in errors: its URL or GIOP reference.
func (ep Endpoint) name() string {
	if ep.GIOP != nil {
		return ep.GIOP.Ref
	}
	return ep.URL
}

// Reference returns a GIOP group's object reference,
// corbaloc:iiop:<host>:<port>/<group>.
func (b *Balancer) Reference(group string) string {
	loc, err := registry.GroupCorbaloc(b.doors[group], group)
	if err != nil {
		return ""
	}
	return loc.String()
}

// waitGIOP polls ref with a LocateRequest every 20ms until the object is
// there, the process exits, or within passes.
func waitGIOP(ctx context.Context, p *Proc, ref string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		last = locateOnce(ctx, ref)
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.died()
		case <-ctx.Done():
			return fmt.Errorf("bench: %s not ready at %s within %s (last: %v); see %s", p.Name, ref, within, last, p.Log)
		case <-tick.C:
		}
	}
}

// locateOnce asks whether the object ref names is there (_non_existent
// after a LocateRequest), on a connection of its own.
func locateOnce(ctx context.Context, ref string) error {
	o, err := orb.New(orb.Options{Locate: true, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer o.Close()
	obj, err := o.Resolve(ref)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = obj.Invoke(cctx, giop.OpNonExistent, nil)
	return err
}

// GIOPHostPort is the endpoint of a GIOP reference's first IIOP profile,
// the key replicas are told apart by on the client's side.
func GIOPHostPort(ref string) string {
	r, err := ior.Parse(ref)
	if err != nil {
		return ""
	}
	p, ok := r.IIOP()
	if !ok {
		return ""
	}
	return p.Address().HostPort()
}

// OverGIOP is implemented by experiments that also run over GIOP
// (--protocol giop): overhead and effectiveness.
type OverGIOP interface {
	OverGIOP() bool
}

// GIOPNames lists the registered experiments that run over GIOP, in Names'
// order.
func GIOPNames() []string {
	var out []string
	for _, n := range Names() {
		if RunsOverGIOP(n) {
			out = append(out, n)
		}
	}
	return out
}

// RunsOverGIOP reports whether the experiment name runs over GIOP.
func RunsOverGIOP(name string) bool {
	exp, ok := New(name)
	if !ok {
		return false
	}
	g, ok := exp.(OverGIOP)
	return ok && g.OverGIOP()
}
