package giopdoor

import (
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// errUnknownKey: the target names no object of this front door.
var errUnknownKey = errors.New("giopdoor: the object key names no group served here")

// errNoReference: the picked member has no IOR to forward to (its address
// is not an object reference).
var errNoReference = errors.New("giopdoor: the picked replica has no object reference")

// targetsGroup reports whether a target names the group: its object key is
// the group's name.
func targetsGroup(snap *frontdoor.Snapshot, t giop.TargetAddress) bool {
	key, err := t.Key()
	return err == nil && string(key) == snap.Group
}

// pickRequest is the strategy's view of a call: GIOP has no client id at
// the front door (planned moves fall back to the picker), the operation
// stands for the HTTP path, and the client's address is the key of
// client-address keyed strategies.
func (c *clientConn) pickRequest(snap *frontdoor.Snapshot, operation string) strategy.Request {
	r := strategy.Request{Path: operation}
	if snap.Key.Source == strategy.KeyClientAddress {
		r.Key = c.clientHost
	}
	return r
}

// bind picks the member a client is forwarded to and counts the binding.
func (c *clientConn) bind(snap *frontdoor.Snapshot, operation string) (*frontdoor.Member, error) {
	req := c.pickRequest(snap, operation)
	m, err := snap.Pick(&req)
	if err != nil {
		return nil, err
	}
	if m.IOR == nil {
		return nil, errNoReference
	}
	m.Counters.Redirected.Add(1)
	c.s.g.Bound(m, "", false)
	return m, nil
}

// redirectRequest answers a two-way Request on-demand or per-session: a
// Reply LOCATION_FORWARD to the picked replica's IOR, OBJECT_NOT_EXIST for
// a key that is not the group's, TRANSIENT when nothing can serve. It
// returns false when the connection must end.
func (c *clientConn) redirectRequest(snap *frontdoor.Snapshot, req *giop.Request) bool {
	to := frontdoor.TimeoutsOf(snap.Timeouts)
	if !targetsGroup(snap, req.Target) {
		rep := giop.ReplyTo(req, giop.StatusSystemException)
		rep.SetSystemException(exceptionFor(errUnknownKey))
		return c.Send(rep, to.Request) == nil
	}
	m, err := c.bind(snap, req.Operation)
	if err != nil {
		c.s.log.Debug("no replica for a GIOP request", "operation", req.Operation, "err", err)
		rep := giop.ReplyTo(req, giop.StatusSystemException)
		rep.SetSystemException(exceptionFor(err))
		return c.Send(rep, to.Request) == nil
	}
	rep := giop.ReplyTo(req, giop.StatusLocationForward)
	rep.SetForward(*m.IOR, false)
	return c.Send(rep, to.Request) == nil
}

// answerLocate answers a LocateRequest. For the group's key, on-demand and
// per-session: OBJECT_FORWARD to the picked replica (giop.locate forward,
// the default: the client's next message goes to its replica), or
// OBJECT_HERE (giop.locate here: the client sends its Request here and is
// forwarded then); per-request: OBJECT_HERE, the front door being where
// the calls go. Other keys: UNKNOWN_OBJECT. When nothing can serve, GIOP 1.2
// gets LOC_SYSTEM_EXCEPTION TRANSIENT; 1.0 and 1.1, which have no such
// status, get OBJECT_HERE so that the Request that follows is answered
// TRANSIENT (UNKNOWN_OBJECT would tell the client the object is gone for
// good).
func (c *clientConn) answerLocate(snap *frontdoor.Snapshot, req *giop.LocateRequest) bool {
	to := frontdoor.TimeoutsOf(snap.Timeouts)
	if !targetsGroup(snap, req.Target) {
		return c.Send(giop.LocateReplyTo(req, giop.LocateUnknownObject), to.Request) == nil
	}
	noReplica := func(err error) bool {
		if req.Version == giop.V12 {
			rep := giop.LocateReplyTo(req, giop.LocateSystemException)
			rep.SetSystemException(exceptionFor(err))
			return c.Send(rep, to.Request) == nil
		}
		return c.Send(giop.LocateReplyTo(req, giop.LocateObjectHere), to.Request) == nil
	}
	if snap.Binding == protocol.PerRequest || snap.GIOP.Locate == protocol.LocateHere {
		if len(snap.Eligible) == 0 {
			return noReplica(frontdoor.ErrNoReplica)
		}
		return c.Send(giop.LocateReplyTo(req, giop.LocateObjectHere), to.Request) == nil
	}
	m, err := c.bind(snap, "")
	if err != nil {
		return noReplica(err)
	}
	rep := giop.LocateReplyTo(req, giop.LocateObjectForward)
	rep.SetForward(*m.IOR, false)
	return c.Send(rep, to.Request) == nil
}
