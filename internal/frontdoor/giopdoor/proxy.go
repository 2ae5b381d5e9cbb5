package giopdoor

import (
	"errors"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// A proxied call goes again only when the attempt policy says so
// (frontdoor.Decide): it provably did not run — connecting failed (another
// member), the connection was closing before anything was written or the
// replica closed it with CloseConnection (the same member, on a fresh
// connection). GIOP has no methods, so a call that may have run is never
// sent again, whatever the group's retry setting. A replica forwarding
// the call elsewhere (LOCATION_FORWARD) sends it to another member. At
// most frontdoor.MaxAttempts dispatches in all.

// call is one proxied Request: a client's call on its way to a member and
// back. Fields other than the immutable ones are guarded by mu.
type call struct {
	c        *clientConn
	snap     *frontdoor.Snapshot
	req      *giop.Request
	clientID uint32
	oneway   bool
	to       frontdoor.Timeouts

	mu       sync.Mutex
	done     bool
	m        *frontdoor.Member // inflight counted on it while set
	tried    []*frontdoor.Member
	attempts int
	up       *upConn
	upID     uint32
	sentAt   time.Time
	timer    *time.Timer
	// addressing is the disposition the member asked for
	// (NEEDS_ADDRESSING_MODE); KeyAddr by default.
	addressing giop.AddressingDisposition
}

// proxyRequest forwards a Request (per-request mode, and oneway calls in
// any mode). The caller has counted it with enter; the call leaves when it
// ends. It returns false when the connection must end.
func (c *clientConn) proxyRequest(snap *frontdoor.Snapshot, req *giop.Request, misaligned bool) bool {
	if misaligned {
		c.Leave()
		c.fail(&protocolError{version: req.Version, order: req.Order, err: errMisaligned})
		return false
	}
	to := frontdoor.TimeoutsOf(snap.Timeouts)
	if !targetsGroup(snap, req.Target) {
		defer c.Leave()
		if !req.ResponseExpected() {
			return true
		}
		rep := giop.ReplyTo(req, giop.StatusSystemException)
		rep.SetSystemException(exceptionFor(errUnknownKey))
		return c.Send(rep, to.Request) == nil
	}
	cl := &call{c: c, snap: snap, req: req, clientID: req.RequestID, oneway: !req.ResponseExpected(), to: to}
	if !cl.oneway {
		c.mu.Lock()
		if _, dup := c.calls[req.RequestID]; dup {
			c.mu.Unlock()
			c.Leave()
			c.fail(&protocolError{version: req.Version, order: req.Order,
				err: errors.New("giopdoor: a request id already in flight was used again")})
			return false
		}
		if c.calls == nil {
			c.calls = map[uint32]*call{}
		}
		c.calls[req.RequestID] = cl
		c.mu.Unlock()
		cl.timer = time.AfterFunc(to.Request, func() {
			d := cl.decide(frontdoor.ReplicaTimeout)
			cl.finish(cl.currentMember(), errCallTimeout, d.ReplicaFailed)
		})
	}
	cl.dispatch(nil)
	return true
}

// dispatch sends the call to a member: the one it has, when still set and
// its connection closed without running the call, or a fresh pick that
// avoids the members already tried. Connect failures move on to another
// member, as the attempt policy decides.
func (cl *call) dispatch(avoid *frontdoor.Member) {
	for {
		cl.mu.Lock()
		if cl.done {
			cl.mu.Unlock()
			return
		}
		if cl.attempts >= frontdoor.MaxAttempts {
			cl.mu.Unlock()
			cl.finish(nil, frontdoor.ErrNoReplica, false)
			return
		}
		cl.attempts++
		if avoid != nil {
			cl.tried = append(cl.tried, avoid)
			avoid = nil
		}
		if cl.m == nil {
			req := cl.c.pickRequest(cl.snap, cl.req.Operation)
			m, err := cl.snap.Acquire(&req, cl.tried, cl.c.s.spill.Add(1))
			if err != nil {
				cl.mu.Unlock()
				cl.finish(nil, err, false)
				return
			}
			cl.m = m
		}
		m := cl.m
		cl.mu.Unlock()

		if m.IOR == nil {
			cl.retryElsewhere(m, nil)
			avoid = m
			continue
		}
		up, err := cl.c.s.up.get(m, cl.req.Version, cl.to)
		if err != nil && !errors.Is(err, errNotSent) {
			cl.c.s.log.Debug("cannot reach a replica", "replica", m.ID(), "err", err)
			d := cl.decide(frontdoor.NotSent)
			if d.ReplicaFailed {
				cl.observe(m, 0, true)
			}
			cl.retryElsewhere(m, nil)
			if !d.Again {
				cl.finish(nil, frontdoor.ErrNoReplica, false)
				return
			}
			avoid = m
			continue
		}
		if err == nil {
			err = up.send(cl)
		}
		if err == nil {
			return
		}
		// errNotSent: the connection was closing, nothing written.
		o := frontdoor.NoResponse
		if errors.Is(err, errNotSent) {
			o = frontdoor.Stale
		}
		d := cl.decide(o)
		switch {
		case d.Again && d.SameReplica:
			continue
		case d.Again:
			cl.retryElsewhere(m, nil)
			avoid = m
			continue
		}
		cl.finish(m, errUpstreamLost, d.ReplicaFailed)
		return
	}
}

// retryElsewhere releases the call's member so that the next dispatch
// picks another. Caller must not hold cl.mu.
func (cl *call) retryElsewhere(m *frontdoor.Member, _ error) {
	cl.mu.Lock()
	if cl.m == m {
		m.Release()
		cl.m = nil
	}
	cl.mu.Unlock()
}

// sent records that the call went out on up as upID.
func (cl *call) sent(up *upConn, upID uint32) {
	cl.mu.Lock()
	cl.up, cl.upID, cl.sentAt = up, upID, cl.c.s.now()
	cl.mu.Unlock()
}

// unsent undoes sent after a failed write.
func (cl *call) unsent(up *upConn) {
	cl.mu.Lock()
	if cl.up == up {
		cl.up = nil
	}
	cl.mu.Unlock()
}

// currentMember is the member the call is (to be) sent to, or nil.
func (cl *call) currentMember() *frontdoor.Member {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.m
}

// onewaySent ends a oneway call once written.
func (cl *call) onewaySent(m *frontdoor.Member) {
	cl.finish(m, nil, false)
}

// reply routes a member's Reply to the client: with the client's request
// id restored, or, for LOCATION_FORWARD (a draining replica's side-car
// sending clients back), by sending the call to another member instead.
func (cl *call) reply(up *upConn, rep *giop.Reply) {
	cl.mu.Lock()
	m := cl.m
	if cl.done || cl.up != up {
		cl.mu.Unlock()
		return
	}
	cl.up = nil
	cl.mu.Unlock()
	switch rep.Status {
	case giop.StatusLocationForward, giop.StatusLocationForwardPerm:
		cl.observe(m, cl.c.s.now().Sub(cl.sentAt), false)
		cl.retryElsewhere(m, nil)
		go cl.dispatch(m)
		return
	case giop.StatusNeedsAddressingMode:
		if mode, err := rep.AddressingMode(); err == nil && mode != cl.addressingMode() {
			cl.mu.Lock()
			cl.addressing = mode
			cl.mu.Unlock()
			go cl.dispatch(nil)
			return
		}
	}
	failed := false
	if rep.Status == giop.StatusSystemException {
		if ex, err := rep.SystemException(); err == nil {
			failed = replicaFailure(ex)
		}
	}
	out := *rep
	out.RequestID = cl.clientID
	b, err := encode(&out)
	if err != nil {
		cl.finish(m, errUpstreamLost, true)
		return
	}
	// Delivered on a goroutine of its own: a client slow to read must not
	// hold up the replies of the others sharing the upstream connection.
	go cl.finishWith(m, b, failed)
}

func (cl *call) addressingMode() giop.AddressingDisposition {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.addressing
}

// closedUpstream handles the member's connection ending with the call in
// flight: after CloseConnection the call did not run and goes again (the
// same member on a fresh connection, or another); otherwise it may have
// run, and the client gets COMM_FAILURE.
func (cl *call) closedUpstream(up *upConn, graceful bool) {
	cl.mu.Lock()
	if cl.done || cl.up != up {
		cl.mu.Unlock()
		return
	}
	cl.up = nil
	m := cl.m
	cl.mu.Unlock()
	o := frontdoor.NoResponse
	if graceful {
		o = frontdoor.Stale
	}
	d := cl.decide(o)
	if d.Again {
		go cl.dispatch(nil)
		return
	}
	cl.finish(m, errUpstreamLost, d.ReplicaFailed)
}

// decide applies the attempt policy to an attempt of the call that ended
// with o. GIOP has no methods: only calls that provably did not run go
// again. Caller must not hold cl.mu.
func (cl *call) decide(o frontdoor.Outcome) frontdoor.Decision {
	cl.mu.Lock()
	n := cl.attempts
	cl.mu.Unlock()
	return frontdoor.Decide(frontdoor.Attempt{Outcome: o, N: n, Retry: cl.snap.Retry, Replayable: true})
}

// replicaFailure tells the system exceptions that count as the replica
// failing (for passive health), as a 5xx does over HTTP.
func replicaFailure(ex giop.SystemException) bool {
	switch ex.RepositoryID {
	case giop.RepoIDTransient, RepoIDCommFailure, RepoIDTimeout, "IDL:omg.org/CORBA/NO_RESOURCES:1.0", "IDL:omg.org/CORBA/INTERNAL:1.0":
		return true
	}
	return false
}

// finish ends the call with err answered as a system exception (twoway
// calls), or, with err nil, as a finished oneway. failed says whether m
// is to blame.
func (cl *call) finish(m *frontdoor.Member, err error, failed bool) {
	var b []byte
	if err != nil && !cl.oneway {
		rep := giop.ReplyTo(cl.req, giop.StatusSystemException)
		rep.SetSystemException(exceptionFor(err))
		b, _ = encode(rep)
	}
	if err != nil {
		cl.c.s.log.Debug("proxied GIOP call failed", "group", cl.snap.Group, "operation", cl.req.Operation, "err", err)
	}
	cl.finishWith(m, b, failed)
}

// finishWith ends the call once: sends answer (when not nil) to the
// client, observes the member, releases it and forgets the call.
func (cl *call) finishWith(m *frontdoor.Member, answer []byte, failed bool) {
	up, upID, held, sentAt, ok := cl.end()
	if !ok {
		return
	}
	if up != nil {
		up.forget(upID)
		if !cl.oneway && answer != nil {
			// The client gets an answer before the member's: tell it.
			up.cancel(cl.req.Version, cl.req.Order, upID)
		}
	}
	if m != nil {
		var latency time.Duration
		if !sentAt.IsZero() {
			latency = cl.c.s.now().Sub(sentAt)
		}
		cl.observe(m, latency, failed)
		m.Counters.Proxied.Add(1)
	}
	if held != nil {
		held.Release()
	}
	if !cl.oneway {
		cl.forget()
	}
	if answer != nil {
		_ = cl.c.SendBytes(answer, cl.to.Request)
	}
	cl.c.Leave()
}

// abandon ends a call whose client went away or cancelled it: the member
// is told with CancelRequest, nothing is observed (frontdoor.ClientGone).
func (cl *call) abandon() {
	up, upID, held, _, ok := cl.end()
	if !ok {
		return
	}
	if up != nil {
		up.forget(upID)
		up.cancel(cl.req.Version, cl.req.Order, upID)
	}
	if held != nil {
		held.Release()
	}
	cl.forget()
	cl.c.Leave()
}

// end marks the call done, once, and takes what it held: its upstream
// connection and request id there, its member's slot, when it was sent.
// ok is false when the call had ended already.
func (cl *call) end() (up *upConn, upID uint32, held *frontdoor.Member, sentAt time.Time, ok bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.done {
		return nil, 0, nil, time.Time{}, false
	}
	cl.done = true
	up, upID, held, sentAt = cl.up, cl.upID, cl.m, cl.sentAt
	cl.up, cl.m = nil, nil
	if cl.timer != nil {
		cl.timer.Stop()
	}
	return up, upID, held, sentAt, true
}

// forget drops the call from its client connection's calls in flight.
func (cl *call) forget() {
	c := cl.c
	c.mu.Lock()
	if c.calls[cl.clientID] == cl {
		delete(c.calls, cl.clientID)
	}
	c.mu.Unlock()
}

// cancelCall forwards a client's CancelRequest to the member with the
// remapped request id. (A CancelRequest for a call already answered, or
// for a fragmented request not yet complete, needs nothing more.)
func (c *clientConn) cancelCall(cr *giop.CancelRequest) {
	c.mu.Lock()
	cl := c.calls[cr.RequestID]
	c.mu.Unlock()
	if cl != nil {
		cl.abandon()
	}
}

func (cl *call) observe(m *frontdoor.Member, latency time.Duration, failed bool) {
	cl.c.s.g.Observe(m, latency, failed)
	if cl.snap.Observer != nil {
		cl.snap.Observer.Observe(m.Replica, latency, failed)
	}
}
