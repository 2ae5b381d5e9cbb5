package giopdeliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// Repository ids of FT::Checkpointable (CORBA 3.x, Fault Tolerant CORBA
// chapter).
const (
	CheckpointableRepoID   = "IDL:omg.org/FT/Checkpointable:1.0"
	NoStateAvailableRepoID = "IDL:omg.org/FT/NoStateAvailable:1.0"
	InvalidStateRepoID     = "IDL:omg.org/FT/InvalidState:1.0"
)

// Operations of FT::Checkpointable.
const (
	OpGetState = "get_state"
	OpSetState = "set_state"
)

// ErrNoState is returned (errors.Is) by State when the servant cannot
// transfer its state: it raised FT::NoStateAvailable or has no get_state.
var ErrNoState = errors.New("giopdeliver: the servant cannot transfer its state")

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("giopdeliver: closed")

// Options configure a Deliverer. The zero value is usable.
type Options struct {
	// Dial opens the connection to the servant; a net.Dialer's when nil.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Limits bound the messages read from the servant (default 16 MiB).
	Limits giop.Limits
	// Logger receives the connection's events at debug level (default:
	// none).
	Logger *slog.Logger
}

// Deliverer delivers ordered GIOP requests to one servant over one
// connection. Safe for concurrent use; calls run one at a time.
type Deliverer struct {
	opts     Options
	log      *slog.Logger
	original ior.IOR

	// mu serialises the calls and guards target, conn and nextID.
	mu sync.Mutex
	// target is the reference calls go to: the original one, or the
	// last one a LOCATION_FORWARD named.
	target ior.IOR
	conn   *servantConn
	nextID uint32

	// closeMu guards closed and open, so that Close interrupts a call.
	closeMu sync.Mutex
	closed  bool
	// open is conn's connection, for Close.
	open net.Conn
}

// New returns a Deliverer to the servant ref names (a corbaloc URL or a
// stringified IOR with an IIOP profile). Nothing is connected until the
// first call.
func New(ref string, opts Options) (*Deliverer, error) {
	r, err := ior.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("giopdeliver: target %q: %w", ref, err)
	}
	if _, ok := r.IIOP(); !ok {
		return nil, fmt.Errorf("giopdeliver: target %q: no IIOP profile (TAG_INTERNET_IOP), want a corbaloc:iiop: URL or an IOR with one", ref)
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{opts: opts, log: log, original: r, target: r}, nil
}

// Close closes the connection, failing a call in progress; later calls
// fail with ErrClosed.
func (d *Deliverer) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	d.closed = true
	if d.open != nil {
		_ = d.open.Close()
	}
	return nil
}

// servantConn is the connection to the servant.
type servantConn struct {
	nc net.Conn
	r  *wire.Reader
	w  *wire.Writer
	// key is the object key of the profile connected to.
	key []byte
	// version is the highest GIOP version the profile allows, for the
	// agent's own calls (get_state, set_state, _is_a).
	version giop.Version
}

// connLocked returns the connection, opening it to the first address of
// the target that answers. Caller must hold d.mu.
func (d *Deliverer) connLocked(ctx context.Context) (*servantConn, error) {
	d.closeMu.Lock()
	closed := d.closed
	d.closeMu.Unlock()
	if closed {
		d.dropLocked()
		return nil, ErrClosed
	}
	if d.conn != nil {
		return d.conn, nil
	}
	var errs []error
	for _, ep := range d.target.Endpoints() {
		nc, err := d.opts.Dial(ctx, "tcp", ep.Address.HostPort())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		d.closeMu.Lock()
		if d.closed {
			d.closeMu.Unlock()
			_ = nc.Close()
			return nil, ErrClosed
		}
		d.open = nc
		d.closeMu.Unlock()
		v := giop.Version{Major: ep.Profile.Version.Major, Minor: min(ep.Profile.Version.Minor, giop.Highest.Minor)}
		if ep.Profile.Version.Major != 1 {
			v = giop.V10
		}
		d.conn = &servantConn{nc: nc, r: wire.NewReader(nc, d.opts.Limits), w: wire.NewWriter(nc), key: ep.Profile.ObjectKey, version: v}
		d.log.Debug("connected to the servant", "addr", ep.Address.HostPort())
		return d.conn, nil
	}
	return nil, fmt.Errorf("giopdeliver: connecting to the servant %s: %w", d.target, errors.Join(errs...))
}

// dropLocked closes the connection, if any. Caller must hold d.mu.
func (d *Deliverer) dropLocked() {
	if d.conn != nil {
		_ = d.conn.nc.Close()
		d.closeMu.Lock()
		if d.open == d.conn.nc {
			d.open = nil
		}
		d.closeMu.Unlock()
		d.conn = nil
	}
}

// errNotRun marks a request the servant closed the connection before
// running (CloseConnection): it may be sent again.
var errNotRun = errors.New("giopdeliver: the servant closed the connection (CloseConnection) before answering")

// callLocked sends req (its request id and target set here) and returns
// the servant's reply. It follows one LOCATION_FORWARD and sends again
// once after a CloseConnection. build makes the request for a connection
// (called again when the connection changes). Caller must hold d.mu.
func (d *Deliverer) callLocked(ctx context.Context, build func(c *servantConn) *giop.Request) (*giop.Reply, error) {
	forwarded, resent := false, false
	for {
		c, err := d.connLocked(ctx)
		if err != nil {
			return nil, err
		}
		req := build(c)
		d.nextID++
		req.RequestID = d.nextID
		req.Target = giop.KeyTarget(c.key)
		rep, err := d.roundTripLocked(ctx, c, req)
		switch {
		case errors.Is(err, errNotRun) && !resent:
			resent = true
			d.dropLocked()
			continue
		case err != nil:
			d.dropLocked()
			return nil, err
		}
		if rep.Status != giop.StatusLocationForward && rep.Status != giop.StatusLocationForwardPerm {
			return rep, nil
		}
		ref, err := rep.Forward()
		if err == nil && forwarded {
			err = errors.New("forwarded a second time")
		}
		if err == nil {
			if _, ok := ref.IIOP(); !ok {
				err = errors.New("the forward reference has no IIOP profile")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("giopdeliver: %s %s: following LOCATION_FORWARD: %w", d.target, req.Operation, err)
		}
		forwarded = true
		d.log.Debug("the servant forwarded the agent", "to", ref.String())
		d.dropLocked()
		d.target = ref
	}
}

// roundTripLocked writes req on c and reads until its Reply. Caller must
// hold d.mu.
func (d *Deliverer) roundTripLocked(ctx context.Context, c *servantConn, req *giop.Request) (*giop.Reply, error) {
	b, err := ordered.Encode(req)
	if err != nil {
		return nil, fmt.Errorf("giopdeliver: encoding %s: %w", req.Operation, err)
	}
	deadline, _ := ctx.Deadline()
	_ = c.nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.nc.Write(b); err != nil {
		return nil, d.ioError(ctx, "sending "+req.Operation, err)
	}
	for {
		raw, err := c.r.Next()
		if err != nil {
			return nil, d.ioError(ctx, "reading the reply to "+req.Operation, err)
		}
		m, err := d.opts.Limits.DecodeMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("giopdeliver: the servant's reply to %s: %w", req.Operation, err)
		}
		switch m := m.(type) {
		case *giop.Reply:
			if m.RequestID == req.RequestID {
				return m, nil
			}
			// A reply to a call abandoned before (its connection is
			// dropped then, so this is a servant's mistake): skipped.
		case *giop.CloseConnection:
			return nil, errNotRun
		case *giop.MessageError:
			return nil, fmt.Errorf("giopdeliver: the servant answered %s with MessageError", req.Operation)
		default:
			return nil, fmt.Errorf("giopdeliver: the servant sent a %v while the agent waited for the reply to %s", m.Type(), req.Operation)
		}
	}
}

// ioError is err, or ctx's error when ctx ended.
func (d *Deliverer) ioError(ctx context.Context, doing string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("giopdeliver: %s: %w", doing, ctx.Err())
	}
	return fmt.Errorf("giopdeliver: %s: %w", doing, err)
}
