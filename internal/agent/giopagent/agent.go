package giopagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

// DefaultDialTimeout bounds each connection attempt to the target unless
// Options.DialTimeout says otherwise.
const DefaultDialTimeout = 5 * time.Second

// ErrClosed is returned by Serve after Shutdown or Close.
var ErrClosed = errors.New("giopagent: agent closed")

// Monitor is what the agent needs of a load monitor; *monitor.Monitor has
// it.
type Monitor interface {
	// Begin starts measuring a call of client; ok == false means the
	// current advisory sends the client back instead (see monitor.Begin).
	Begin(client string, bound bool) (c monitor.Call, ok bool)
	// FrontDoor is the group reference clients are sent back to: a
	// corbaloc URL or a stringified IOR; "" before registration.
	FrontDoor() string
}

// Options configure an Agent.
type Options struct {
	// Target is the replica the agent stands in front of. Calls go to the
	// address of its first IIOP profile that accepts a connection.
	// Required: it must have an IIOP profile.
	Target ior.IOR
	// TypeID is the repository id given to the group reference that shed
	// clients are forwarded to (a corbaloc URL carries none). Default
	// Target.TypeID.
	TypeID string
	// Monitor measures calls and says which to send back. nil: calls are
	// passed through unmeasured and none is sent back.
	Monitor Monitor
	// Limits bound the messages the agent accepts from either side
	// (default: message_size up to giop.DefaultMaxMessageSize).
	Limits giop.Limits
	// DialTimeout bounds each connection attempt to the target. Default
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger receives the agent's logs. Default slog.Default().
	Logger *slog.Logger
}

// Agent is a GIOP side-car: it accepts client connections, opens one
// connection to the target per client connection, passes messages through
// both ways, measures two-way calls with its Monitor and answers the
// clients the monitor sends back with LOCATION_FORWARD to the group. Safe
// for concurrent use.
type Agent struct {
	opts    Options
	log     *slog.Logger
	targets []string // host:port of the target's IIOP profiles, in order
	typeID  string
	fwd     atomic.Pointer[forwardRef]

	// conns are the listeners and client connections.
	conns    acceptloop.Conns[*conn]
	warnOnce sync.Once

	forwards atomic.Uint64
}

// New returns an agent for opts. It does not listen or dial until Serve.
func New(opts Options) (*Agent, error) {
	var targets []string
	for _, p := range opts.Target.Profiles {
		if ip, ok := p.(ior.IIOPProfile); ok {
			targets = append(targets, net.JoinHostPort(ip.Host, strconv.Itoa(int(ip.Port))))
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("giopagent: target: the reference has no IIOP profile (nothing to connect to)")
	}
	if opts.DialTimeout < 0 {
		return nil, fmt.Errorf("giopagent: dial timeout %v: must not be negative", opts.DialTimeout)
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	typeID := opts.TypeID
	if typeID == "" {
		typeID = opts.Target.TypeID
	}
	return &Agent{
		opts:    opts,
		log:     opts.Logger.With("component", "giop-agent"),
		targets: targets,
		typeID:  typeID,
	}, nil
}

// Reference returns the reference clients use to reach the target through
// the agent at host and port: see the package function Reference.
func (a *Agent) Reference(host string, port uint16) ior.IOR {
	return Reference(a.opts.Target, a.typeID, host, port)
}

// Reference returns the reference clients use to reach target through an
// agent at host and port: target's IOR with every IIOP profile pointing
// there (see ior.IOR.WithAddress), typed with typeID when target's own type
// id is empty (a corbaloc target has none). This is the address the agent
// registers with the balancer.
func Reference(target ior.IOR, typeID, host string, port uint16) ior.IOR {
	ref := target.WithAddress(host, port)
	if ref.TypeID == "" {
		ref.TypeID = typeID
	}
	return ref
}

// Forwards returns how many requests the agent answered with
// LOCATION_FORWARD to the group.
func (a *Agent) Forwards() uint64 { return a.forwards.Load() }

// Serve accepts client connections on ln until Shutdown or Close, and
// returns ErrClosed then. Temporary accept errors (out of file descriptors,
// say) are retried with a back-off (see package acceptloop); any other
// accept error ends Serve and is returned.
func (a *Agent) Serve(ln net.Listener) error {
	return a.conns.Serve(ln, func(nc net.Conn) *conn { return newConn(a, nc) }, (*conn).serve,
		acceptloop.Options{Logger: a.log, Name: "giop agent", Closed: ErrClosed})
}

// Shutdown stops accepting, then closes each client connection once it has
// no call in flight, telling the client with CloseConnection so that its
// ORB reissues later calls elsewhere. It returns when every connection is
// closed, or closes the rest at once when ctx ends and returns ctx.Err().
func (a *Agent) Shutdown(ctx context.Context) error {
	a.conns.Close()
	done := a.conns.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, c := range a.conns.List() {
			c.closeIfIdle()
		}
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			a.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops accepting and closes every connection at once; calls in
// flight fail on their clients with COMM_FAILURE.
func (a *Agent) Close() error {
	a.conns.Close()
	for _, c := range a.conns.List() {
		c.close()
	}
	a.conns.Wait()
	return nil
}

// dialTarget connects to the first of the target's addresses that accepts.
func (a *Agent) dialTarget() (net.Conn, error) {
	var errs []error
	d := net.Dialer{Timeout: a.opts.DialTimeout}
	for _, addr := range a.targets {
		nc, err := d.Dial("tcp", addr)
		if err == nil {
			return nc, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("giopagent: connect to target: %w", errors.Join(errs...))
}

// forwardRef is the group reference shed clients are sent to, parsed from
// the monitor's FrontDoor.
type forwardRef struct {
	src string
	ref ior.IOR
	err error
}

// groupRef returns the reference to forward shed clients to.
func (a *Agent) groupRef() (ior.IOR, error) {
	src := ""
	if a.opts.Monitor != nil {
		src = a.opts.Monitor.FrontDoor()
	}
	if f := a.fwd.Load(); f != nil && f.src == src {
		return f.ref, f.err
	}
	f := &forwardRef{src: src}
	f.ref, f.err = parseGroupRef(src, a.typeID)
	a.fwd.Store(f)
	return f.ref, f.err
}

// parseGroupRef parses a group reference: a corbaloc URL, typed with
// typeID, or a stringified IOR (typed with typeID if it has no type).
func parseGroupRef(s, typeID string) (ior.IOR, error) {
	if s == "" {
		return ior.IOR{}, errors.New("giopagent: no group reference yet (not registered)")
	}
	if c, err := ior.ParseCorbaloc(s); err == nil {
		return c.IOR(typeID), nil
	}
	ref, err := ior.Parse(s)
	if err != nil {
		return ior.IOR{}, fmt.Errorf("giopagent: group reference %q: %w", s, err)
	}
	if ref.IsNil() {
		return ior.IOR{}, fmt.Errorf("giopagent: group reference %q is the nil reference", s)
	}
	if ref.TypeID == "" {
		ref.TypeID = typeID
	}
	return ref, nil
}

// isClosedConn reports whether err only says a connection was closed,
// which is how every connection ends.
func isClosedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF)
}
