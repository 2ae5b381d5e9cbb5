package orb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of Options.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultMaxForwards = 16
)

// Options configure an ORB. The zero value is a usable default: GIOP 1.2,
// big-endian, no LocateRequest.
type Options struct {
	// Version is the GIOP version of requests: 1.0, 1.1 or 1.2 (default
	// 1.2). A target whose IIOP profile advertises an older version gets
	// that one.
	Version giop.Version
	// Order is the byte order of the messages sent (default big-endian).
	Order cdr.ByteOrder
	// Locate sends a LocateRequest before the first call on each new
	// target (a reference not yet located, or one just forwarded to), as
	// omniORB does by default.
	Locate bool
	// DialTimeout bounds connecting (default DefaultDialTimeout).
	DialTimeout time.Duration
	// MaxForwards bounds the forwards one call follows before it fails
	// with TRANSIENT (default DefaultMaxForwards): a guard against loops.
	MaxForwards int
	// Limits bound the messages accepted (default: giop's, 16 MiB).
	Limits giop.Limits
}

func (o Options) withDefaults() (Options, error) {
	if o.Version == (giop.Version{}) {
		o.Version = giop.V12
	}
	if !o.Version.Supported() {
		return o, &protocol.FieldError{Field: "Version", Value: o.Version.String(), Allowed: "must be 1.0, 1.1 or 1.2"}
	}
	if o.Order != cdr.BigEndian && o.Order != cdr.LittleEndian {
		return o, &protocol.FieldError{Field: "Order", Value: int(o.Order), Allowed: "must be cdr.BigEndian or cdr.LittleEndian"}
	}
	if o.DialTimeout < 0 || o.MaxForwards < 0 {
		return o, &protocol.FieldError{Field: "DialTimeout, MaxForwards", Value: fmt.Sprintf("%v, %d", o.DialTimeout, o.MaxForwards), Allowed: "must not be negative"}
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.MaxForwards == 0 {
		o.MaxForwards = DefaultMaxForwards
	}
	return o, nil
}

// ORB holds the connections, one per endpoint ("host:port"), shared by
// every object and call. Safe for concurrent use; Close it when done.
type ORB struct {
	opts   Options
	dialer net.Dialer

	mu      sync.Mutex
	conns   map[string]*conn
	dialing map[string]*dialing
	closed  bool
}

// dialing is a connection being opened, which other calls to the same
// endpoint wait for rather than open their own.
type dialing struct {
	done chan struct{}
	err  error
}

// New returns an ORB.
func New(opts Options) (*ORB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("orb: %w", err)
	}
	return &ORB{
		opts:    opts,
		dialer:  net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second},
		conns:   map[string]*conn{},
		dialing: map[string]*dialing{},
	}, nil
}

// Close closes every connection (with CloseConnection in GIOP 1.2 where no
// call waits) and fails calls in flight. Later calls fail with
// BAD_INV_ORDER.
func (o *ORB) Close() error {
	o.mu.Lock()
	o.closed = true
	conns := make([]*conn, 0, len(o.conns))
	for _, c := range o.conns {
		conns = append(conns, c)
	}
	o.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return nil
}

// Conns returns the number of open connections.
func (o *ORB) Conns() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.conns)
}

// Resolve returns the object a reference names: a stringified IOR
// ("IOR:...") or a corbaloc URL ("corbaloc:iiop:..."). Nothing is
// connected until the first call.
func (o *ORB) Resolve(ref string) (*Object, error) {
	r, err := ior.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("orb: reference: %w", err)
	}
	return o.Object(r)
}

// Object returns the object ref names. ref must have an IIOP profile.
func (o *ORB) Object(ref ior.IOR) (*Object, error) {
	if _, ok := ref.IIOP(); !ok {
		return nil, &protocol.FieldError{Field: "reference", Value: ref.String(), Allowed: "must have an IIOP profile (TAG_INTERNET_IOP)"}
	}
	return &Object{orb: o, original: ref, current: ref}, nil
}

// connTo returns the connection to addr, opening it if needed. Calls to an
// endpoint being connected wait for that connection.
func (o *ORB) connTo(ctx context.Context, addr string) (*conn, error) {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return nil, ErrClosed
		}
		if c := o.conns[addr]; c != nil {
			o.mu.Unlock()
			return c, nil
		}
		if d := o.dialing[addr]; d != nil {
			o.mu.Unlock()
			select {
			case <-d.done:
				if d.err != nil {
					return nil, d.err
				}
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		d := &dialing{done: make(chan struct{})}
		o.dialing[addr] = d
		o.mu.Unlock()

		nc, err := o.dialer.DialContext(ctx, "tcp", addr)
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		var c *conn
		o.mu.Lock()
		delete(o.dialing, addr)
		switch {
		case err != nil:
		case o.closed:
			_ = nc.Close()
			err = ErrClosed
		default:
			c = newConn(o, addr, nc)
			o.conns[addr] = c
		}
		d.err = err
		close(d.done)
		o.mu.Unlock()
		return c, err
	}
}

// forget drops a broken connection from the table.
func (o *ORB) forget(c *conn) {
	o.mu.Lock()
	if o.conns[c.addr] == c {
		delete(o.conns, c.addr)
	}
	o.mu.Unlock()
}

// versionFor is the GIOP version to speak to a profile: the configured
// one, or the profile's IIOP version when older.
func (o *ORB) versionFor(p ior.IIOPProfile) giop.Version {
	v := o.opts.Version
	pv := giop.Version{Major: p.Version.Major, Minor: p.Version.Minor}
	if pv.Major == 1 && pv.Minor < v.Minor {
		v = pv
	}
	return v
}

// isClosed reports whether err comes from the ORB being closed.
func isClosed(err error) bool { return errors.Is(err, ErrClosed) }
