package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

// GIOPPrimeKey is the object key of the Prime servant unless
// GIOPPrimeOptions.Key says otherwise.
const GIOPPrimeKey = "Prime"

// DefaultGIOPInflight is how many requests of one connection a GIOPPrime
// runs at once unless GIOPPrimeOptions.MaxInflight says otherwise; the
// connection's next request waits for a slot.
const DefaultGIOPInflight = 64

// Repository ids of the system exceptions the servant raises besides the
// giop package's.
const (
	repoIDBadOperation = "IDL:omg.org/CORBA/BAD_OPERATION:1.0"
	repoIDBadParam     = "IDL:omg.org/CORBA/BAD_PARAM:1.0"
	repoIDMarshal      = "IDL:omg.org/CORBA/MARSHAL:1.0"
	repoIDObject       = "IDL:omg.org/CORBA/Object:1.0"
)

// ErrGIOPServerClosed is returned by GIOPPrime.Serve after Shutdown.
var ErrGIOPServerClosed = errors.New("backend: GIOP server closed")

// GIOPPrimeOptions configure a GIOPPrime. The zero value serves the
// object key "Prime" with no monitor.
type GIOPPrimeOptions struct {
	// Key is the object key of the Prime object (default GIOPPrimeKey).
	Key []byte
	// Monitor, when set, measures every is_prime and prime_count call
	// (client id: the client connection's remote address) and sends back
	// the clients its advisories name: their call is answered
	// LOCATION_FORWARD to the group's reference instead of running.
	Monitor *monitor.Monitor
	// Group is the group the monitor registers with: the object key of
	// the group's reference when the front door the balancer names has
	// none.
	Group string
	// Limits bound the messages accepted (default 16 MiB).
	Limits giop.Limits
	// MaxInflight bounds the requests of one connection running at once
	// (default DefaultGIOPInflight).
	MaxInflight int
	// Logger receives connection errors at debug level (default: none).
	Logger *slog.Logger
}

// GIOPPrime serves the Prime test interface (giop.PrimeRepoID) over
// GIOP 1.0, 1.1 and 1.2, in either byte order, with fulcrum's own codec:
//
//	interface Prime {
//	  boolean is_prime(in long n);     // trial division (IsPrime)
//	  long    prime_count(in long x);  // primes below x (PrimeCount)
//	};
//
// plus CORBA::Object's _is_a and _non_existent. It answers LocateRequest
// (OBJECT_HERE for its key, UNKNOWN_OBJECT otherwise) and serves many
// connections, and on each runs up to MaxInflight requests at once,
// replying in each request's version and byte order. Requests for another
// key get OBJECT_NOT_EXIST, unknown operations BAD_OPERATION, undecodable
// arguments MARSHAL, out-of-range ones BAD_PARAM; bytes that are not GIOP
// (bad magic, unknown version, malformed or oversized messages, fragment
// misuse) get MessageError and the connection is closed, leaving the
// others undisturbed. Safe for concurrent use.
type GIOPPrime struct {
	opts GIOPPrimeOptions
	log  *slog.Logger
	// forward caches the group's reference built from the monitor's
	// front door.
	forward atomic.Pointer[groupRef]

	// srv serves the connections.
	srv giopServer
}

// groupRef is the reference rebinds forward to, and the front door it was
// made from.
type groupRef struct {
	frontDoor string
	ref       ior.IOR
	err       error
}

// NewGIOPPrime returns a Prime servant.
func NewGIOPPrime(opts GIOPPrimeOptions) *GIOPPrime {
	if len(opts.Key) == 0 {
		opts.Key = []byte(GIOPPrimeKey)
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = DefaultGIOPInflight
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &GIOPPrime{opts: opts, log: log}
	s.srv = giopServer{key: opts.Key, limits: opts.Limits, maxInflight: opts.MaxInflight, log: log, dispatch: s.dispatch}
	return s
}

// Reference returns the servant's object reference at host and port: a
// typed IOR (giop.PrimeRepoID) with one IIOP 1.2 profile carrying its key.
// Its String form is the address to register with a GIOP group.
func (s *GIOPPrime) Reference(host string, port uint16) ior.IOR {
	return ior.IOR{TypeID: giop.PrimeRepoID, Profiles: []ior.Profile{ior.IIOPProfile{
		Version: ior.V12, Host: host, Port: port, ObjectKey: bytes.Clone(s.opts.Key),
	}}}
}

// Serve accepts connections on ln until Shutdown, and returns
// ErrGIOPServerClosed then. Temporary accept errors (out of file
// descriptors, say) are retried with a back-off (see package acceptloop);
// any other accept error ends Serve and is returned.
func (s *GIOPPrime) Serve(ln net.Listener) error { return s.srv.serve(ln) }

// Shutdown stops accepting, tells every client CloseConnection (requests
// it has not answered were not run and may be sent again), waits for the
// requests running to be answered, and closes the connections. When ctx
// ends first, the connections are closed at once and ctx's error returned.
func (s *GIOPPrime) Shutdown(ctx context.Context) error { return s.srv.shutdown(ctx) }

func (s *GIOPPrime) dispatch(req *giop.Request, client string) *giop.Reply {
	if key, err := req.Target.Key(); err != nil || !bytes.Equal(key, s.opts.Key) {
		return systemException(req, giop.RepoIDObjectNotExist, giop.CompletedNo)
	}
	switch req.Operation {
	case giop.OpIsPrime, giop.OpPrimeCount:
		arg, err := req.LongArg()
		if err != nil {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		if req.Operation == giop.OpPrimeCount && (arg < 0 || arg > MaxCountX) {
			return systemException(req, repoIDBadParam, giop.CompletedNo)
		}
		if s.opts.Monitor != nil {
			call, ok := s.opts.Monitor.Begin(client, true)
			if !ok {
				if ref, ok := s.groupReference(); ok {
					rep := giop.ReplyTo(req, giop.StatusLocationForward)
					rep.SetForward(ref, false)
					return rep
				}
				// No usable group reference: serve the call rather
				// than forward the client nowhere.
			}
			defer call.End()
		}
		rep := giop.ReplyTo(req, giop.StatusNoException)
		if req.Operation == giop.OpIsPrime {
			rep.SetBooleanResult(arg >= 0 && IsPrime(uint64(arg)))
		} else {
			rep.SetLongResult(int32(PrimeCount(int(arg))))
		}
		return rep
	case giop.OpIsA:
		d := req.BodyDecoder()
		id := d.String("logical_type_id")
		d.Done("arguments")
		if d.Err() != nil {
			return systemException(req, repoIDMarshal, giop.CompletedNo)
		}
		rep := giop.ReplyTo(req, giop.StatusNoException)
		rep.SetBooleanResult(id == giop.PrimeRepoID || id == repoIDObject)
		return rep
	case giop.OpNonExistent, giop.OpNonExistentOld:
		rep := giop.ReplyTo(req, giop.StatusNoException)
		rep.SetBooleanResult(false)
		return rep
	}
	return systemException(req, repoIDBadOperation, giop.CompletedNo)
}

// groupReference is the reference rebinds forward to: the monitor's front
// door (a corbaloc URL or an IOR) typed as Prime, with the group's name as
// the key when the URL has none.
func (s *GIOPPrime) groupReference() (ior.IOR, bool) {
	fd := s.opts.Monitor.FrontDoor()
	if g := s.forward.Load(); g != nil && g.frontDoor == fd {
		return g.ref, g.err == nil
	}
	g := &groupRef{frontDoor: fd}
	g.ref, g.err = GroupReference(fd, s.opts.Group)
	if g.err != nil {
		s.log.Warn("cannot forward clients back to the group", "front_door", fd, "err", g.err)
	}
	s.forward.Store(g)
	return g.ref, g.err == nil
}

// GroupReference is the Prime-typed reference of a GIOP group from its
// front door as the balancer names it: a corbaloc:iiop: URL (with the group
// as the object key when it has none) or a stringified IOR.
func GroupReference(frontDoor, group string) (ior.IOR, error) {
	fd := strings.TrimSpace(frontDoor)
	if len(fd) >= 4 && strings.EqualFold(fd[:4], "IOR:") {
		ref, err := ior.ParseStringified(fd)
		if err != nil {
			return ior.IOR{}, fmt.Errorf("front door %q: %w", frontDoor, err)
		}
		if ref.TypeID == "" {
			ref.TypeID = giop.PrimeRepoID
		}
		return ref, nil
	}
	loc, err := ior.ParseCorbaloc(fd)
	if err != nil {
		return ior.IOR{}, fmt.Errorf("front door %q: %w", frontDoor, err)
	}
	if len(loc.Key) == 0 {
		if group == "" {
			return ior.IOR{}, fmt.Errorf("front door %q: names no object key and the group is unknown", frontDoor)
		}
		loc.Key = []byte(group)
	}
	return loc.IOR(giop.PrimeRepoID), nil
}
