package balancer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/bridge"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopbridge"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/health"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// frontDoorServer is what a group needs of its front door, whatever the
// protocol: serve a listener until shut down.
type frontDoorServer interface {
	// Serve accepts connections on ln until Shutdown or Close; it then
	// returns an error for which serverClosed is true.
	Serve(ln net.Listener) error
	// Shutdown stops accepting and finishes calls in flight, bounded by
	// ctx.
	Shutdown(ctx context.Context) error
	// Close closes everything at once.
	Close() error
}

// newFrontDoorLocked builds the front door of the group's protocol. Caller
// holds g.mu.
func (g *group) newFrontDoorLocked() frontDoorServer {
	log := g.b.log.With("group", g.name)
	acc := g.b.accessLog.Load()
	if registry.IsReplicated(g.spec) {
		return g.newBridgeLocked(log, acc)
	}
	if g.spec.Protocol == protocol.ProtocolGIOP {
		return giopdoor.New(g, giopdoor.Options{Logger: log, Dial: g.b.opts.Dial})
	}
	if g.spec.Protocol == protocol.ProtocolTCP {
		return tcpdoor.New(g, tcpdoor.Options{Logger: log, Now: g.b.now, Dial: g.b.opts.Dial})
	}
	return httpdoor.New(g, httpdoor.Options{Logger: log, AccessLog: acc.w, AccessLogJSON: acc.json, Engine: g.b.opts.HTTPEngine, Dial: g.b.opts.Dial, ReplicaTLS: g.replicaTLS, TLS: g.tlsConfigLocked()})
}

// newBridgeLocked builds a replicated group's front door, the bridge of
// its protocol, ordering through the group's hub (or, when its log could
// not be opened, refusing every ordered call: 503 or TRANSIENT). Caller
// holds g.mu.
func (g *group) newBridgeLocked(log *slog.Logger, acc *accessLog) frontDoorServer {
	var hub bridge.Orderer = noHub{group: g.name}
	if h := g.hubLocked(); h != nil {
		hub = h
	}
	if g.spec.Protocol == protocol.ProtocolGIOP {
		spec := registry.WithDefaults(g.spec)
		return giopbridge.New(hub, giopbridge.Options{
			Key: []byte(g.name), MaxMessageSize: spec.GIOP.MaxMessageSize, MaxBufferedBytes: spec.GIOP.MaxBufferedBytes,
			IdleTimeout: spec.Timeouts.Idle.D(), RequestTimeout: spec.Timeouts.Request.D(), Logger: log,
		})
	}
	return bridge.New(g, hub, bridge.Options{Logger: log, AccessLog: acc.w, AccessLogJSON: acc.json, Dial: g.b.opts.Dial, ReplicaTLS: g.replicaTLS, TLS: g.tlsConfigLocked()})
}

// noHub is the orderer of a replicated group whose log is not open.
type noHub struct{ group string }

func (n noHub) Order(context.Context, replhub.Call) (replhub.Reply, error) {
	return replhub.Reply{}, fmt.Errorf("%w: group %s", ErrHubNotRunning, n.group)
}

func (noHub) LastWrite(string) uint64 { return 0 }

func (noHub) AppliedBy(string) uint64 { return 0 }

// serverClosed tells the error Serve returns after Shutdown or Close.
func serverClosed(err error) bool {
	return errors.Is(err, http.ErrServerClosed) || errors.Is(err, giopdoor.ErrServerClosed) || errors.Is(err, giopbridge.ErrServerClosed) ||
		errors.Is(err, tcpdoor.ErrServerClosed)
}

// referenceLocked is the group's object reference (GIOP groups; nil for
// others, or when the advertise URL cannot make one). Caller holds g.mu.
func (g *group) referenceLocked() *protocol.Reference {
	if g.spec.Protocol != protocol.ProtocolGIOP {
		return nil
	}
	c, err := registry.GroupCorbaloc(g.advertiseLocked(), g.name)
	if err != nil {
		return nil
	}
	ref := c.IOR(g.typeIDLocked())
	var also []ior.Address
	if len(c.Addresses) == 1 && g.spec.Advertise == registry.GroupAdvertise(g.spec, g.spec.FrontDoor) {
		// advertise derived from the front door: the other instances'
		// front doors of the group follow this one's (cluster.go).
		also = g.peerDoorsLocked(c.Addresses[0].Version)
	}
	if len(c.Addresses)+len(also) > 1 {
		// Several addresses: one profile with alternate addresses, the
		// form omniORB fails over with (it reads only an IOR's first
		// profile).
		if multi, err := registry.GroupIOR(c, g.typeIDLocked(), also); err == nil {
			ref = multi
		}
	}
	return &protocol.Reference{Corbaloc: c.String(), IOR: ref.String()}
}

// frontDoorURLLocked is what monitors are told the front door is: the
// advertise URL, or for GIOP groups the group's corbaloc reference (which
// a GIOP side-car forwards clients back to). Caller holds g.mu.
func (g *group) frontDoorURLLocked() string {
	if ref := g.referenceLocked(); ref != nil {
		return ref.Corbaloc
	}
	return g.advertiseLocked()
}

// typeIDLocked is the repository id of the group's replicas: the first one
// registered with a typed IOR, else CORBA::Object. A replicated group's
// replicas are agents registered by URL (registry.AddressProtocol), so its
// reference is typed CORBA::Object: a client narrows it with _is_a, which
// the bridge orders like any call and the servants answer. Caller holds
// g.mu.
func (g *group) typeIDLocked() string {
	for _, m := range g.order {
		if m.ref != nil && m.ref.TypeID != "" {
			return m.ref.TypeID
		}
	}
	return registry.CORBAObjectTypeID
}

// parseAddressLocked sets what the front door needs parsed from m's
// address: its URL (HTTP, and every replicated group's agents) or its IOR
// (GIOP). Caller holds g.mu (or m is not yet shared).
func (g *group) parseAddressLocked(m *member) {
	m.url, m.ref = nil, nil
	if registry.AddressProtocol(g.spec) == protocol.ProtocolGIOP {
		if ref, err := registry.ParseGIOPAddress(m.rec.Address); err == nil {
			m.ref = &ref
		}
		return
	}
	if u, err := url.Parse(m.rec.Address); err == nil {
		m.url = u
	}
}

// forwardIORLocked is the reference clients are forwarded to for m: its
// registered IOR, typed with the group's type id when it came without one
// (a corbaloc URL). Caller holds g.mu.
func (g *group) forwardIORLocked(m *member, typeID string) *ior.IOR {
	if m.ref == nil || m.ref.TypeID != "" {
		return m.ref
	}
	typed := *m.ref
	typed.TypeID = typeID
	return &typed
}

// giopProbe is a GIOP replica's active health probe: a LocateRequest for
// its object key on a fresh connection, which must be answered
// OBJECT_HERE or OBJECT_FORWARD within the probe's timeout. A LocateRequest
// rather than a bare TCP connect, so that a replica whose ORB accepts
// connections but no longer serves the object (or nothing at all) is taken
// out; every ORB answers LocateRequests without running application code.
// It connects with dial (the balancer's Options.Dial).
func giopProbe(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context, health.Target) bool {
	return func(ctx context.Context, t health.Target) bool {
		ref, err := registry.ParseGIOPAddress(t.URL)
		if err != nil {
			return false
		}
		return giopdoor.Locate(ctx, dial, ref) == nil
	}
}

// tcpProbe is a tcp replica's active health probe (tcpdoor.Probe): a TCP
// connect to its host:port, or with health.send and health.expect an
// exchange on it. check gives the current send and expect (they change on
// reload without a new prober). It connects with dial (the balancer's
// Options.Dial).
func tcpProbe(dial func(ctx context.Context, network, addr string) (net.Conn, error), check func() (send, expect string)) func(context.Context, health.Target) bool {
	return func(ctx context.Context, t health.Target) bool {
		send, expect := check()
		return tcpdoor.Probe(ctx, dial, t.URL, send, expect) == nil
	}
}
