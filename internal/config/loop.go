package config

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// checkLoops refuses a replica declared at an address the file has the
// balancer listen on: the admin API or a group's front door. Such a
// replica is the balancer itself (a proxy loop, or the admin API behind a
// front door). Only what the file says is known here: loopback addresses,
// localhost and the wildcard forms; the balancer checks again against the
// machine's interface addresses and the ports listeners on port 0 got
// (balancer.LoopError).
func checkLoops(f File) []error {
	var ls []registry.Listener
	ls = append(ls, registry.Listener{Name: "admin API", Addr: f.Admin})
	for _, g := range f.Groups {
		ls = append(ls, registry.Listener{Name: fmt.Sprintf("front door of group %q", g.Name), Addr: g.FrontDoor})
	}
	var errs []error
	for i, g := range f.Groups {
		for j, r := range g.Replicas {
			if l, ok := registry.LoopTarget(g.Protocol, r.Address, ls, registry.Local{}); ok {
				errs = append(errs, &protocol.FieldError{
					Field: fmt.Sprintf("groups[%d].replicas[%d].address", i, j), Value: r.Address,
					Allowed: fmt.Sprintf("must not lead back into this balancer, but it is the %s (%s)", l.Name, l.Addr),
				})
			}
		}
	}
	return errs
}
