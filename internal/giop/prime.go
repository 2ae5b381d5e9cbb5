package giop

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// The Prime test interface of fulcrum's benches and demo:
//
//	interface Prime {
//	  boolean is_prime(in long n);
//	  long    prime_count(in long x);
//	};
//
// Both operations take one long and return a boolean or a long, so the
// helpers below are all a servant or a client needs.
const (
	PrimeRepoID      = "IDL:Prime:1.0"
	OpIsPrime        = "is_prime"
	OpPrimeCount     = "prime_count"
	OpIsA            = "_is_a"         // CORBA::Object::_is_a, which narrowing clients call first
	OpNonExistent    = "_non_existent" // CORBA::Object::_non_existent
	OpNonExistentOld = "_not_existent" // its GIOP 1.0 spelling
)

// SetLongArg makes the body a single in long argument.
func (r *Request) SetLongArg(n int32) { r.SetBody(func(e *cdr.Encoder) { e.Long(n) }) }

// LongArg decodes a body that is a single in long argument.
func (r *Request) LongArg() (int32, error) {
	d := r.BodyDecoder()
	n := d.Long("argument")
	d.Done("argument")
	if err := d.Err(); err != nil {
		return 0, fmt.Errorf("giop: %s arguments: %w", r.Operation, err)
	}
	return n, nil
}

// SetBooleanResult makes r a NO_EXCEPTION reply returning v.
func (r *Reply) SetBooleanResult(v bool) {
	r.Status = StatusNoException
	r.SetBody(func(e *cdr.Encoder) { e.Boolean(v) })
}

// BooleanResult decodes a NO_EXCEPTION reply returning a boolean.
func (r *Reply) BooleanResult() (bool, error) {
	d, err := r.resultDecoder()
	if err != nil {
		return false, err
	}
	v := d.Boolean("result")
	d.Done("result")
	if err := d.Err(); err != nil {
		return false, fmt.Errorf("giop: result: %w", err)
	}
	return v, nil
}

// SetLongResult makes r a NO_EXCEPTION reply returning v.
func (r *Reply) SetLongResult(v int32) {
	r.Status = StatusNoException
	r.SetBody(func(e *cdr.Encoder) { e.Long(v) })
}

// LongResult decodes a NO_EXCEPTION reply returning a long.
func (r *Reply) LongResult() (int32, error) {
	d, err := r.resultDecoder()
	if err != nil {
		return 0, err
	}
	v := d.Long("result")
	d.Done("result")
	if err := d.Err(); err != nil {
		return 0, fmt.Errorf("giop: result: %w", err)
	}
	return v, nil
}

// resultDecoder returns the body decoder of a NO_EXCEPTION reply, and for a
// SYSTEM_EXCEPTION reply the exception as the error.
func (r *Reply) resultDecoder() (*cdr.Decoder, error) {
	switch r.Status {
	case StatusNoException:
		return r.BodyDecoder(), nil
	case StatusSystemException:
		ex, err := r.SystemException()
		if err != nil {
			return nil, err
		}
		return nil, ex
	}
	return nil, fmt.Errorf("giop: reply status %v carries no result", r.Status)
}
