package monitor

import (
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Call is one call measured with Begin. End it exactly once when the call
// finishes.
type Call struct {
	m     *Monitor
	start time.Time
	rif   int64
}

// Begin starts measuring one call on a path that is not HTTP: a GIOP
// servant, a side-car agent passing calls on to an unmodified server. client
// identifies the caller (a connection, a host; "" when unknown) and bound
// says the caller reached this replica through the group's binding, so the
// call is counted for it and an advisory may send it back.
//
// When the current advisory sends client back, Begin returns ok == false:
// the caller must answer with its protocol's rebind (an HTTP 307, a GIOP
// LOCATION_FORWARD to FrontDoor) instead of running the call, and must not
// call End. A client targeted under a high advisory is sent back once per
// advisory epoch; under drain, every bound call is.
func (m *Monitor) Begin(client string, bound bool) (c Call, ok bool) {
	if bound {
		if a := m.advice.Load(); a != nominalAdvice {
			if reg := m.reg.Load(); reg != nil && reg.frontDoor != "" && a.sendBack(client) {
				m.rebinds.Add(1)
				return Call{}, false
			}
		}
		if client != "" && len(client) <= protocol.MaxClientIDLength {
			m.clients.count(client)
		}
	}
	m.calls.Add(1)
	rif := m.inflight.Add(1)
	return Call{m: m, start: m.clock.Now(), rif: rif}, true
}

// End finishes the call: its latency and the in-flight count are
// accounted. End on the zero Call does nothing.
func (c Call) End() {
	if c.m != nil {
		c.m.finish(c.start, c.rif)
	}
}

// FrontDoor returns where rebinds point: Options.FrontDoor, else the front
// door the balancer answered the registration with; "" before the first
// registration.
func (m *Monitor) FrontDoor() string {
	if reg := m.reg.Load(); reg != nil {
		return reg.frontDoor
	}
	return ""
}
