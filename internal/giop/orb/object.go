package orb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// Object is a reference a client calls: the original reference it was made
// from and, once forwarded, the reference it uses until forwarded again or
// until that reference fails. Safe for concurrent use; concurrent calls
// share its binding.
type Object struct {
	orb *ORB

	mu        sync.Mutex
	original  ior.IOR
	current   ior.IOR
	forwarded bool
	located   bool
	// gen counts changes of current, so that a call only moves the
	// binding it used (not one another call has moved since).
	gen         uint64
	disposition giop.AddressingDisposition
	// endpoint indexes current.Endpoints(): the address calls try first,
	// the last one that could be connected to.
	endpoint int
}

// Result is the outcome of a call that got an answer.
type Result struct {
	// Reply is the reply: NO_EXCEPTION or USER_EXCEPTION.
	Reply *giop.Reply
	// Target is the reference that answered.
	Target ior.IOR
	// Forwards counts the forwards followed during the call.
	Forwards int
	// Reverted says the call went back to the original reference after
	// the forwarded one failed.
	Reverted bool
}

// binding is a snapshot of an object's target.
type binding struct {
	ref       ior.IOR
	forwarded bool
	located   bool
	gen       uint64
	disp      giop.AddressingDisposition
	endpoint  int
}

func (obj *Object) snapshot() binding {
	obj.mu.Lock()
	defer obj.mu.Unlock()
	return binding{ref: obj.current, forwarded: obj.forwarded, located: obj.located, gen: obj.gen, disp: obj.disposition, endpoint: obj.endpoint}
}

// Target returns the reference calls go to now.
func (obj *Object) Target() ior.IOR {
	obj.mu.Lock()
	defer obj.mu.Unlock()
	return obj.current
}

// Original returns the reference the object was made from (or the last
// permanent forward).
func (obj *Object) Original() ior.IOR {
	obj.mu.Lock()
	defer obj.mu.Unlock()
	return obj.original
}

// Forwarded reports whether calls go to a reference the object was
// forwarded to.
func (obj *Object) Forwarded() bool {
	obj.mu.Lock()
	defer obj.mu.Unlock()
	return obj.forwarded
}

// forward moves the binding b to ref (for good with perm), unless another
// call has moved it since b.
func (obj *Object) forward(b binding, ref ior.IOR, perm bool) {
	obj.mu.Lock()
	defer obj.mu.Unlock()
	if obj.gen != b.gen {
		return
	}
	obj.gen++
	obj.current, obj.located, obj.disposition, obj.endpoint = ref, false, giop.KeyAddr, 0
	if perm {
		obj.original, obj.forwarded = ref, false
	} else {
		obj.forwarded = true
	}
}

// revert sends the object back to its original reference after the
// forwarded one of b failed. It reports whether b was forwarded: whether
// the call may go again to another reference.
func (obj *Object) revert(b binding) bool {
	if !b.forwarded {
		return false
	}
	obj.mu.Lock()
	defer obj.mu.Unlock()
	if obj.gen == b.gen {
		obj.gen++
		obj.current, obj.forwarded, obj.located, obj.disposition, obj.endpoint = obj.original, false, false, giop.KeyAddr, 0
	}
	return true
}

// useEndpoint makes endpoint i of b's reference the one later calls try
// first, unless the binding has moved since b.
func (obj *Object) useEndpoint(b binding, i int) {
	obj.mu.Lock()
	if obj.gen == b.gen {
		obj.endpoint = i
	}
	obj.mu.Unlock()
}

// connect connects to b's reference: to the endpoint that worked last,
// and when that cannot be connected to, to each other address the
// reference lists (further IIOP profiles, TAG_ALTERNATE_IIOP_ADDRESS
// components), in order. Nothing has been sent when it fails, so trying
// the next address never runs a call twice. It returns the connection,
// the endpoint connected to and its address.
func (obj *Object) connect(ctx context.Context, b binding) (*conn, ior.Endpoint, string, error) {
	eps := b.ref.Endpoints()
	var errs []error
	for k := range eps {
		i := (b.endpoint + k) % len(eps)
		addr := eps[i].Address.HostPort()
		c, err := obj.orb.connTo(ctx, addr)
		if err == nil {
			if i != b.endpoint {
				obj.useEndpoint(b, i)
			}
			return c, eps[i], addr, nil
		}
		if ctx.Err() != nil || isClosed(err) {
			return nil, ior.Endpoint{}, addr, err
		}
		errs = append(errs, fmt.Errorf("connecting to %s: %w", addr, err))
	}
	if len(errs) == 0 {
		return nil, ior.Endpoint{}, "", errors.New("orb: the reference lists no IIOP address")
	}
	return nil, ior.Endpoint{}, eps[b.endpoint%len(eps)].Address.HostPort(), errors.Join(errs...)
}

func (obj *Object) markLocated(b binding) {
	obj.mu.Lock()
	if obj.gen == b.gen {
		obj.located = true
	}
	obj.mu.Unlock()
}

func (obj *Object) setDisposition(b binding, d giop.AddressingDisposition) {
	obj.mu.Lock()
	if obj.gen == b.gen {
		obj.disposition = d
	}
	obj.mu.Unlock()
}

// Invoke calls operation op with the arguments args encodes (nil: none)
// and waits for the reply, following forwards. It returns the reply when
// its status is NO_EXCEPTION or USER_EXCEPTION; a SYSTEM_EXCEPTION reply is
// returned as a giop.SystemException error, and failures of the ORB's own as
// *LocalError. When ctx ends first, CancelRequest is sent and ctx's error
// returned.
func (obj *Object) Invoke(ctx context.Context, op string, args func(e *cdr.Encoder)) (*Result, error) {
	return obj.invoke(ctx, op, args, true)
}

// InvokeOneway sends operation op as a oneway call: no reply is awaited.
// Forwards are not learnt, since no reply comes.
func (obj *Object) InvokeOneway(ctx context.Context, op string, args func(e *cdr.Encoder)) error {
	_, err := obj.invoke(ctx, op, args, false)
	return err
}

func (obj *Object) invoke(ctx context.Context, op string, args func(e *cdr.Encoder), twoway bool) (*Result, error) {
	o := obj.orb
	res := &Result{}
	retried := false
	// retry says whether a failure of binding b, which did not run the
	// call, lets it go again: once, after reverting a forwarded binding.
	retry := func(b binding) bool {
		if obj.revert(b) && !retried {
			retried, res.Reverted = true, true
			return true
		}
		return false
	}
	for hops := 0; ; hops++ {
		if hops > o.opts.MaxForwards {
			return nil, transient("more than %d forwards for one call", o.opts.MaxForwards)
		}
		b := obj.snapshot()
		c, ep, addr, err := obj.connect(ctx, b)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case isClosed(err):
				return nil, localError(RepoIDBadInvOrder, giop.CompletedNo, "%w", err)
			case retry(b):
				continue
			}
			return nil, transient("%w", err)
		}
		version := o.versionFor(ep.Profile)
		env := giop.Envelope{Version: version, Order: o.opts.Order}

		if o.opts.Locate && !b.located {
			again, err := obj.locate(ctx, c, b, env, ep, res)
			if err != nil {
				var se *sendError
				var be *brokenError
				switch {
				case ctx.Err() != nil:
					return nil, ctx.Err()
				case errors.As(err, &se) || errors.As(err, &be):
					// A LocateRequest runs nothing: any connection
					// failure leaves the call unsent.
					if retry(b) {
						continue
					}
					return nil, transient("locating at %s: %w", addr, err)
				}
				return nil, err
			}
			if again {
				continue
			}
		}

		req := &giop.Request{Envelope: env, Operation: op, Target: target(b, ep)}
		if twoway {
			req.ResponseFlags = giop.FlagsTwoway
		}
		if args != nil {
			req.SetBody(args)
		}
		m, err := c.roundTrip(ctx, req, func(id uint32) { req.RequestID = id }, twoway)
		if err != nil {
			var se *sendError
			unsent := errors.As(err, &se) || errors.Is(err, errPeerClosed)
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, giop.ErrInvalid) || errors.Is(err, giop.ErrBodyMisaligned):
				return nil, marshal("encoding %s: %w", op, err)
			case isClosed(err):
				return nil, localError(RepoIDBadInvOrder, giop.CompletedNo, "%w", err)
			case unsent && errors.Is(err, errPeerClosed) && !retried:
				// An orderly close: the request was not processed
				// and may go again, on a new connection (a forwarded
				// binding goes back to the original reference).
				res.Reverted = obj.revert(b)
				retried = true
				continue
			case unsent && retry(b):
				continue
			case unsent:
				return nil, transient("sending to %s: %w", addr, err)
			}
			obj.revert(b)
			return nil, commFailure(giop.CompletedMaybe, "%s: %w", addr, err)
		}
		if !twoway {
			return res, nil
		}
		rep, ok := m.(*giop.Reply)
		if !ok {
			return nil, marshal("%s answered request %d with a %v", addr, req.RequestID, m.Type())
		}
		switch rep.Status {
		case giop.StatusNoException, giop.StatusUserException:
			res.Reply, res.Target = rep, b.ref
			return res, nil
		case giop.StatusSystemException:
			ex, err := rep.SystemException()
			if err != nil {
				return nil, marshal("system exception from %s: %w", addr, err)
			}
			// A forwarded reference that no longer serves: back to the
			// original, and once more there if the call did not run.
			if b.forwarded && (ex.RepositoryID == giop.RepoIDTransient || ex.RepositoryID == giop.RepoIDObjectNotExist) {
				if ex.Completed == giop.CompletedNo && retry(b) {
					continue
				}
				obj.revert(b)
			}
			return nil, ex
		case giop.StatusLocationForward, giop.StatusLocationForwardPerm:
			ref, err := rep.Forward()
			if err != nil {
				return nil, marshal("forward from %s: %w", addr, err)
			}
			if _, ok := ref.IIOP(); !ok {
				return nil, localError(RepoIDInvObjref, giop.CompletedNo, "%s forwarded to a reference without an IIOP profile", addr)
			}
			obj.forward(b, ref, rep.Status == giop.StatusLocationForwardPerm)
			res.Forwards++
			continue
		case giop.StatusNeedsAddressingMode:
			d, err := rep.AddressingMode()
			if err != nil || d < giop.KeyAddr || d > giop.ReferenceAddr {
				return nil, marshal("addressing mode from %s: %v (%v)", addr, d, err)
			}
			obj.setDisposition(b, d)
			continue
		}
		return nil, marshal("%s answered with reply status %v", addr, rep.Status)
	}
}

// locate sends a LocateRequest for b and applies the answer: it returns
// again == true when the object moved (forwarded, or another addressing
// mode asked for), and an error for UNKNOWN_OBJECT (OBJECT_NOT_EXIST) and
// LOC_SYSTEM_EXCEPTION.
func (obj *Object) locate(ctx context.Context, c *conn, b binding, env giop.Envelope, ep ior.Endpoint, res *Result) (again bool, err error) {
	lr := &giop.LocateRequest{Envelope: env, Target: target(b, ep)}
	m, err := c.roundTrip(ctx, lr, func(id uint32) { lr.RequestID = id }, true)
	if err != nil {
		return false, err
	}
	rep, ok := m.(*giop.LocateReply)
	if !ok {
		return false, marshal("%s answered LocateRequest %d with a %v", c.addr, lr.RequestID, m.Type())
	}
	switch rep.Status {
	case giop.LocateObjectHere:
		obj.markLocated(b)
		return false, nil
	case giop.LocateObjectForward, giop.LocateObjectForwardPerm:
		ref, err := rep.Forward()
		if err != nil {
			return false, marshal("forward from %s: %w", c.addr, err)
		}
		if _, ok := ref.IIOP(); !ok {
			return false, localError(RepoIDInvObjref, giop.CompletedNo, "%s forwarded to a reference without an IIOP profile", c.addr)
		}
		obj.forward(b, ref, rep.Status == giop.LocateObjectForwardPerm)
		res.Forwards++
		return true, nil
	case giop.LocateUnknownObject:
		return false, giop.ObjectNotExist(0, giop.CompletedNo)
	case giop.LocateSystemException:
		ex, err := rep.SystemException()
		if err != nil {
			return false, marshal("system exception from %s: %w", c.addr, err)
		}
		return false, ex
	case giop.LocateNeedsAddressingMode:
		d, err := rep.AddressingMode()
		if err != nil || d < giop.KeyAddr || d > giop.ReferenceAddr {
			return false, marshal("addressing mode from %s: %v (%v)", c.addr, d, err)
		}
		obj.setDisposition(b, d)
		return true, nil
	}
	return false, marshal("%s answered with locate status %v", c.addr, rep.Status)
}

// target is the TargetAddress of a request to b through endpoint ep: the
// object key unless the server asked for another addressing mode (GIOP
// 1.2), ep's profile or the whole reference with ep's profile selected.
func target(b binding, ep ior.Endpoint) giop.TargetAddress {
	switch b.disp {
	case giop.ProfileAddr:
		return giop.TargetAddress{Disposition: giop.ProfileAddr, Profile: ep.Profile}
	case giop.ReferenceAddr:
		return giop.TargetAddress{Disposition: giop.ReferenceAddr, Reference: giop.IORAddressingInfo{SelectedProfileIndex: uint32(ep.ProfileIndex), IOR: b.ref}}
	}
	return giop.KeyTarget(ep.Profile.ObjectKey)
}

// IsA asks the object whether it supports the interface repoID
// (CORBA::Object::_is_a).
func (obj *Object) IsA(ctx context.Context, repoID string) (bool, error) {
	res, err := obj.Invoke(ctx, giop.OpIsA, func(e *cdr.Encoder) { e.String(repoID) })
	if err != nil {
		return false, err
	}
	return replyBool(res)
}

func replyBool(res *Result) (bool, error) {
	if res.Reply.Status == giop.StatusUserException {
		return false, localError(RepoIDUnknownError, giop.CompletedYes, "unexpected user exception")
	}
	v, err := res.Reply.BooleanResult()
	if err != nil {
		return false, marshal("%w", err)
	}
	return v, nil
}

func replyLong(res *Result) (int32, error) {
	if res.Reply.Status == giop.StatusUserException {
		return 0, localError(RepoIDUnknownError, giop.CompletedYes, "unexpected user exception")
	}
	v, err := res.Reply.LongResult()
	if err != nil {
		return 0, marshal("%w", err)
	}
	return v, nil
}

// Prime is the client stub of fulcrum's Prime test interface
// (giop.PrimeRepoID).
type Prime struct {
	Object *Object
}

// IsPrime calls is_prime(n). The Result says which replica answered.
func (p Prime) IsPrime(ctx context.Context, n int32) (bool, *Result, error) {
	res, err := p.Object.Invoke(ctx, giop.OpIsPrime, func(e *cdr.Encoder) { e.Long(n) })
	if err != nil {
		return false, nil, err
	}
	v, err := replyBool(res)
	return v, res, err
}

// PrimeCount calls prime_count(x): the number of primes below x.
func (p Prime) PrimeCount(ctx context.Context, x int32) (int32, *Result, error) {
	res, err := p.Object.Invoke(ctx, giop.OpPrimeCount, func(e *cdr.Encoder) { e.Long(x) })
	if err != nil {
		return 0, nil, err
	}
	v, err := replyLong(res)
	return v, res, err
}
