package giopdeliver

import (
	"context"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// Repository ids of the system exceptions that say the servant has no
// such operation.
const (
	repoIDBadOperation = "IDL:omg.org/CORBA/BAD_OPERATION:1.0"
	repoIDNoImplement  = "IDL:omg.org/CORBA/NO_IMPLEMENT:1.0"
)

// State calls get_state() and returns the State it returns. ErrNoState
// when the servant raises FT::NoStateAvailable or has no get_state.
func (d *Deliverer) State(ctx context.Context) ([]byte, error) {
	rep, err := d.invoke(ctx, OpGetState, nil)
	if err != nil {
		return nil, err
	}
	body, err := result(rep, OpGetState)
	if err != nil {
		return nil, err
	}
	s := body.OctetSeq("State")
	body.Done("State")
	if err := body.Err(); err != nil {
		return nil, fmt.Errorf("giopdeliver: %s result: %w", OpGetState, err)
	}
	return s, nil
}

// SetState calls set_state(state). FT::InvalidState and the servant's
// other exceptions are errors naming them.
func (d *Deliverer) SetState(ctx context.Context, state []byte) error {
	rep, err := d.invoke(ctx, OpSetState, func(e *cdr.Encoder) { e.OctetSeq(state) })
	if err != nil {
		return err
	}
	_, err = result(rep, OpSetState)
	return err
}

// CanCheckpoint reports whether the servant is an FT::Checkpointable: its
// _is_a answer, or, when it cannot answer _is_a, whether get_state
// succeeds.
func (d *Deliverer) CanCheckpoint(ctx context.Context) bool {
	rep, err := d.invoke(ctx, giop.OpIsA, func(e *cdr.Encoder) { e.String(CheckpointableRepoID) })
	if err == nil && rep.Status == giop.StatusNoException {
		if yes, err := rep.BooleanResult(); err == nil {
			return yes
		}
	}
	if ctx.Err() != nil {
		return false
	}
	_, err = d.State(ctx)
	return err == nil
}

// invoke calls op on the servant with the arguments args writes, in the
// GIOP version its profile allows, big-endian.
func (d *Deliverer) invoke(ctx context.Context, op string, args func(e *cdr.Encoder)) (*giop.Reply, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rep, err := d.callLocked(ctx, func(c *servantConn) *giop.Request {
		req := &giop.Request{Envelope: giop.Envelope{Version: c.version}, ResponseFlags: giop.FlagsTwoway,
			Target: giop.KeyTarget(c.key), Operation: op}
		if c.version != giop.V12 {
			req.Principal = []byte{}
		}
		if args != nil {
			req.SetBody(args)
		}
		return req
	})
	if err != nil {
		return nil, fmt.Errorf("giopdeliver: %s: %w", op, err)
	}
	return rep, nil
}

// result returns the decoder of a NO_EXCEPTION reply's body, and an error
// naming the exception otherwise: ErrNoState for NoStateAvailable and for
// a servant without the operation.
func result(rep *giop.Reply, op string) (*cdr.Decoder, error) {
	switch rep.Status {
	case giop.StatusNoException:
		return rep.BodyDecoder(), nil
	case giop.StatusUserException:
		d := rep.BodyDecoder()
		id := d.String("exception id")
		if err := d.Err(); err != nil {
			return nil, fmt.Errorf("giopdeliver: %s raised an undecodable user exception: %w", op, err)
		}
		if id == NoStateAvailableRepoID {
			return nil, fmt.Errorf("%w: %s raised %s", ErrNoState, op, id)
		}
		return nil, fmt.Errorf("giopdeliver: %s raised %s", op, id)
	case giop.StatusSystemException:
		ex, err := rep.SystemException()
		if err != nil {
			return nil, fmt.Errorf("giopdeliver: %s: %w", op, err)
		}
		if ex.RepositoryID == repoIDBadOperation || ex.RepositoryID == repoIDNoImplement {
			return nil, fmt.Errorf("%w: %s raised %w", ErrNoState, op, ex)
		}
		return nil, fmt.Errorf("giopdeliver: %s raised %w", op, ex)
	}
	return nil, errors.New("giopdeliver: " + op + ": reply status " + rep.Status.String())
}
