package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
)

// The Counter interface of seed 001's test application over GIOP
// (internal/backend/idl/counter.idl), with the repository ids a standard
// ORB derives from that IDL:
//
//	module FT {  // #pragma prefix "omg.org"
//	  typedef sequence<octet> State;
//	  exception NoStateAvailable {};
//	  exception InvalidState {};
//	  interface Checkpointable {
//	    State get_state() raises (NoStateAvailable);
//	    void  set_state(in State s) raises (InvalidState);
//	  };
//	};
//	interface Counter : FT::Checkpointable {
//	  long long increment();
//	  long long value();
//	};
const (
	CounterRepoID          = "IDL:Counter:1.0"
	CheckpointableRepoID   = "IDL:omg.org/FT/Checkpointable:1.0"
	NoStateAvailableRepoID = "IDL:omg.org/FT/NoStateAvailable:1.0"
	InvalidStateRepoID     = "IDL:omg.org/FT/InvalidState:1.0"

	OpIncrement = "increment"
	OpValue     = "value"
	OpGetState  = "get_state"
	OpSetState  = "set_state"
)

// GIOPCounterKey is the object key of the Counter servant unless
// GIOPCounterOptions.Key says otherwise.
const GIOPCounterKey = "Counter"

// DefaultNextTimeout bounds a relay's call to the next tier unless
// GIOPCounterOptions.NextTimeout says otherwise.
const DefaultNextTimeout = 10 * time.Second

// GIOPCounterOptions configure a GIOPCounter. The zero value serves a
// counter (tier 3) under the object key "Counter".
type GIOPCounterOptions struct {
	// Key is the object key (default GIOPCounterKey).
	Key []byte
	// Limits bound the messages accepted (default 16 MiB).
	Limits giop.Limits
	// MaxInflight bounds the requests of one connection running at once
	// (default DefaultGIOPInflight).
	MaxInflight int
	// Logger receives connection errors at debug level (default: none).
	Logger *slog.Logger
	// Now and Rand stamp each addition of a request without the bridge's
	// time/seed service context (defaults: the clock and math/rand/v2).
	Now  func() time.Time
	Rand func() uint64
	// Next, when set, makes the servant the relay (tier 2): increment
	// calls Next and adds what it returns instead of 1. A Next error
	// answers TRANSIENT, COMPLETED_MAYBE (the next tier may have counted
	// the call), with the relay's counter unchanged.
	Next func(ctx context.Context) (int64, error)
	// NextTimeout bounds one call of Next (default DefaultNextTimeout).
	NextTimeout time.Duration
}

// GIOPCounter serves the Counter interface (CounterRepoID) over GIOP
// 1.0-1.2, in either byte order, on the same connection handling as
// GIOPPrime:
//
//   - increment() adds 1 (or, for a relay, Next's result) and returns the
//     new value; value() returns it. The addition is stamped from the
//     bridge's time/seed service context (ordered.ServiceTimeSeed) when the
//     request carries one, BAD_PARAM when it is malformed.
//   - get_state() returns the state as CounterState's JSON encoding
//     (MarshalCounterState), the same bytes as HTTP GET /fulcrum/state; it
//     never raises FT::NoStateAvailable, since a counter always has a
//     state.
//   - set_state(s) replaces the state with s, or raises FT::InvalidState
//     (a USER_EXCEPTION reply whose body is the exception's repository id,
//     the exception having no members) when ParseCounterState refuses s.
//   - _is_a answers true for Counter, FT::Checkpointable and CORBA::Object;
//     _non_existent false.
//
// Other keys get OBJECT_NOT_EXIST, other operations BAD_OPERATION,
// undecodable arguments MARSHAL. Safe for concurrent use.
type GIOPCounter struct {
	opts GIOPCounterOptions
	c    *Counter
	srv  giopServer
}

// NewGIOPCounter returns a Counter servant keeping its state in c.
func NewGIOPCounter(c *Counter, opts GIOPCounterOptions) *GIOPCounter {
	if len(opts.Key) == 0 {
		opts.Key = []byte(GIOPCounterKey)
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = DefaultGIOPInflight
	}
	if opts.NextTimeout <= 0 {
		opts.NextTimeout = DefaultNextTimeout
	}
	co := CounterOptions{Now: opts.Now, Rand: opts.Rand}.withDefaults()
	opts.Now, opts.Rand = co.Now, co.Rand
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &GIOPCounter{opts: opts, c: c}
	s.srv = giopServer{key: opts.Key, limits: opts.Limits, maxInflight: opts.MaxInflight, log: log, dispatch: s.dispatch}
	return s
}

// Reference returns the servant's object reference at host and port: a
// typed IOR (CounterRepoID) with one IIOP 1.2 profile carrying its key.
func (s *GIOPCounter) Reference(host string, port uint16) ior.IOR {
	return ior.IOR{TypeID: CounterRepoID, Profiles: []ior.Profile{ior.IIOPProfile{
		Version: ior.V12, Host: host, Port: port, ObjectKey: bytes.Clone(s.opts.Key),
	}}}
}

// Serve accepts connections on ln until Shutdown, and returns
// ErrGIOPServerClosed then (see GIOPPrime.Serve).
func (s *GIOPCounter) Serve(ln net.Listener) error { return s.srv.serve(ln) }

// Shutdown stops serving as GIOPPrime.Shutdown does.
func (s *GIOPCounter) Shutdown(ctx context.Context) error { return s.srv.shutdown(ctx) }

func (s *GIOPCounter) dispatch(req *giop.Request, _ string) *giop.Reply {
	if key, err := req.Target.Key(); err != nil || !bytes.Equal(key, s.opts.Key) {
		return systemException(req, giop.RepoIDObjectNotExist, giop.CompletedNo)
	}
	noArgs := func() bool {
		d := req.BodyDecoder()
		d.Done("arguments")
		return d.Err() == nil
	}
	switch req.Operation {
	case OpIncrement:
		if !noArgs() {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		delta := int64(1)
		if s.opts.Next != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.NextTimeout)
			n, err := s.opts.Next(ctx)
			cancel()
			if err != nil {
				s.srv.log.Debug("the next tier failed", "err", err)
				return systemException(req, giop.RepoIDTransient, giop.CompletedMaybe)
			}
			delta = n
		}
		stamp, err := s.stamp(req)
		if err != nil {
			s.srv.log.Debug("increment refused", "err", err)
			return systemException(req, repoIDBadParam, giop.CompletedNo)
		}
		st, err := s.c.Add(delta, stamp)
		if err != nil {
			return systemException(req, repoIDBadParam, giop.CompletedNo)
		}
		// Fault injection point (1) of the MEAD paper's experiments, over
		// GIOP: the servant's process dies after reading a request, before
		// replying (package failpoint).
		// gofail: var counterGIOPBeforeReply struct{}
		// failpoint.Kill()
		return longLongReply(req, st.Value)
	case OpValue:
		if !noArgs() {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		return longLongReply(req, s.c.State().Value)
	case OpGetState:
		if !noArgs() {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		b := MarshalCounterState(s.c.State())
		rep := giop.ReplyTo(req, giop.StatusNoException)
		rep.SetBody(func(e *cdr.Encoder) { e.OctetSeq(b) })
		return rep
	case OpSetState:
		d := req.BodyDecoder()
		b := d.OctetSeq("s")
		d.Done("s")
		if d.Err() != nil {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		st, err := ParseCounterState(b)
		if err != nil {
			s.srv.log.Debug("set_state refused", "err", err)
			return userException(req, InvalidStateRepoID)
		}
		s.c.Restore(st)
		return giop.ReplyTo(req, giop.StatusNoException)
	case giop.OpIsA:
		d := req.BodyDecoder()
		id := d.String("logical_type_id")
		d.Done("arguments")
		if d.Err() != nil {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		rep := giop.ReplyTo(req, giop.StatusNoException)
		rep.SetBooleanResult(id == CounterRepoID || id == CheckpointableRepoID || id == repoIDObject)
		return rep
	case giop.OpNonExistent, giop.OpNonExistentOld:
		rep := giop.ReplyTo(req, giop.StatusNoException)
		rep.SetBooleanResult(false)
		return rep
	}
	return systemException(req, repoIDBadOperation, giop.CompletedNo)
}

// stamp is the Stamp of req: from the bridge's time/seed service context
// (ordered.ServiceTimeSeed) when it carries one, as the HTTP counter takes
// Fulcrum-Time and Fulcrum-Seed (the id is the first number of a PCG
// seeded with the seed), the clock and the random source otherwise. A
// malformed context is an error naming it.
func (s *GIOPCounter) stamp(req *giop.Request) (Stamp, error) {
	data, ok := giop.FindServiceContext(req.ServiceContexts, ordered.ServiceTimeSeed)
	if !ok {
		return Stamp{Time: s.opts.Now(), ID: s.opts.Rand()}, nil
	}
	ts, err := ordered.DecodeTimeSeed(data)
	if err != nil {
		return Stamp{}, fmt.Errorf("backend: %s: %w", OpIncrement, err)
	}
	return Stamp{Time: ts.Time, ID: rand.New(rand.NewPCG(ts.Seed, 0)).Uint64()}, nil
}

// longLongReply is a NO_EXCEPTION reply to req returning v.
func longLongReply(req *giop.Request, v int64) *giop.Reply {
	rep := giop.ReplyTo(req, giop.StatusNoException)
	rep.SetBody(func(e *cdr.Encoder) { e.LongLong(v) })
	return rep
}

// userException is a USER_EXCEPTION reply to req raising the exception
// repoID, which has no members: the body is its repository id as a CDR
// string (CORBA 3.x, GIOP chapter, "Reply Message" › "Reply Body").
func userException(req *giop.Request, repoID string) *giop.Reply {
	rep := giop.ReplyTo(req, giop.StatusUserException)
	rep.SetBody(func(e *cdr.Encoder) { e.String(repoID) })
	return rep
}

// UserException is a USER_EXCEPTION a Counter raised, such as
// FT::InvalidState: its repository id (the exceptions of Checkpointable
// have no members).
type UserException struct {
	RepositoryID string
}

func (e *UserException) Error() string {
	return fmt.Sprintf("backend: user exception %s", e.RepositoryID)
}

// IsUserException reports whether err is the user exception repoID.
func IsUserException(err error, repoID string) bool {
	var ue *UserException
	return errors.As(err, &ue) && ue.RepositoryID == repoID
}
