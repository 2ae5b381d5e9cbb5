package backend

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
)

// CounterClient is the client stub of the Counter interface (CounterRepoID)
// on fulcrum's Go ORB. System exceptions come back as the ORB returns them
// (giop.SystemException, *orb.LocalError); user exceptions as
// *UserException.
type CounterClient struct {
	Object *orb.Object
}

// Increment calls increment() and returns the new value.
func (c CounterClient) Increment(ctx context.Context) (int64, error) {
	return c.longLong(ctx, OpIncrement)
}

// Value calls value().
func (c CounterClient) Value(ctx context.Context) (int64, error) {
	return c.longLong(ctx, OpValue)
}

// GetState calls FT::Checkpointable::get_state().
func (c CounterClient) GetState(ctx context.Context) ([]byte, error) {
	res, err := c.Object.Invoke(ctx, OpGetState, nil)
	if err != nil {
		return nil, err
	}
	d, err := resultDecoder(res, OpGetState)
	if err != nil {
		return nil, err
	}
	b := d.OctetSeq("result")
	d.Done("result")
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("backend: %s result: %w", OpGetState, err)
	}
	return b, nil
}

// SetState calls FT::Checkpointable::set_state(s); a refused state is the
// user exception InvalidStateRepoID.
func (c CounterClient) SetState(ctx context.Context, s []byte) error {
	res, err := c.Object.Invoke(ctx, OpSetState, func(e *cdr.Encoder) { e.OctetSeq(s) })
	if err != nil {
		return err
	}
	d, err := resultDecoder(res, OpSetState)
	if err != nil {
		return err
	}
	d.Done("result")
	if err := d.Err(); err != nil {
		return fmt.Errorf("backend: %s result: %w", OpSetState, err)
	}
	return nil
}

func (c CounterClient) longLong(ctx context.Context, op string) (int64, error) {
	res, err := c.Object.Invoke(ctx, op, nil)
	if err != nil {
		return 0, err
	}
	d, err := resultDecoder(res, op)
	if err != nil {
		return 0, err
	}
	v := d.LongLong("result")
	d.Done("result")
	if err := d.Err(); err != nil {
		return 0, fmt.Errorf("backend: %s result: %w", op, err)
	}
	return v, nil
}

// resultDecoder returns the decoder of a NO_EXCEPTION reply's body, and
// for a USER_EXCEPTION reply the *UserException it carries.
func resultDecoder(res *orb.Result, op string) (*cdr.Decoder, error) {
	if res.Reply.Status != giop.StatusUserException {
		return res.Reply.BodyDecoder(), nil
	}
	d := res.Reply.BodyDecoder()
	id := d.String("exception id")
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("backend: %s raised an undecodable user exception: %w", op, err)
	}
	return nil, &UserException{RepositoryID: id}
}
