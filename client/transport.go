package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of Options.
const (
	// DefaultMaxHops is how many redirects and retries one call may take.
	DefaultMaxHops = 4
	// DefaultMaxBufferedBody is the largest request body (without GetBody)
	// kept in memory so that it can follow a redirect.
	DefaultMaxBufferedBody = 1 << 20
)

// ErrTooManyHops is returned when a call was redirected or retried more
// than Options.MaxHops times. The call did not run.
var ErrTooManyHops = errors.New("client: too many redirects and retries")

var errNotReplayable = errors.New("client: request body cannot be sent again")

// Options configure a Transport. The zero value is usable.
type Options struct {
	// Base sends the requests. Default a clone of http.DefaultTransport:
	// its settings, with a connection pool of the Transport's own, so that
	// CloseIdleConnections closes this Transport's connections only (on
	// the shared http.DefaultTransport it would break other code's calls
	// that are just taking an idle connection).
	Base http.RoundTripper
	// ClientID is the client's stable id, sent as Fulcrum-Client. Default
	// a random one, fixed for the Transport's life. At most 128
	// characters.
	ClientID string
	// MaxHops bounds the redirects followed and retries made for one call.
	// Default DefaultMaxHops.
	MaxHops int
	// MaxBufferedBody is the largest request body without GetBody that is
	// buffered so that it can follow a redirect. Default
	// DefaultMaxBufferedBody; negative: never buffer.
	MaxBufferedBody int64
	// Logger receives binding changes at debug level. Default
	// slog.Default().
	Logger *slog.Logger
	// Replicated says that the front doors this Transport calls (the
	// URLs' own, or Options.FrontDoors) are a replicated group's bridges
	// (binding replicated), from the first call. Default false: the
	// Transport learns it from the group's first answer that carries
	// Fulcrum-Position, so that a transport error on a call before that
	// answer is returned rather than re-sent. Set it only for a Transport
	// that calls replicated groups alone: a call to another group that
	// fails after it was sent would be re-sent, and could run twice.
	Replicated bool
	// FrontDoors lists one group's front doors on several balancer
	// instances (a cluster), as base URLs ("http://10.0.0.1:8000"). A call
	// sent to any of them is a call to the group: the Transport keeps one
	// binding for all of them, and a call that must go through a front
	// door goes to the one that last answered. It moves to the next only
	// when the call provably did not run: after a dial error (nothing was
	// sent), after that front door's own 503 (fulcrum's JSON error: code
	// no_replica or overloaded, naming the group in Fulcrum-Group), or
	// after any transport error once a front door of the group has bound
	// this client (a redirecting front door runs no call) — each front
	// door once per call. Never after a replica's 503 or any other
	// answer, which is returned as is, so that no call runs twice. A
	// replicated group's call also moves after any transport error and
	// after a 503 with Retry-After: its log deduplicates the call sent
	// again (see the package doc). Default none: a call goes to the front
	// door its URL names. An entry that is not an http(s) base URL makes
	// every call fail, naming it.
	FrontDoors []string
	// Timeout bounds each call, redirects and retries included, from
	// sending it until its answer's body is read to the end or closed,
	// as http.Client.Timeout does. Default 0: no bound but the request's
	// context. Prefer it to http.Client.Timeout: net/http enforces a
	// Client.Timeout through any RoundTripper but its own (this one
	// included) with a goroutine, a timer and a cancel channel per call,
	// which Transport must then watch with a second goroutine; on
	// loopback that costs more than the binding itself. Timeout costs a
	// context deadline, as Client.Timeout does over net/http's own
	// Transport.
	Timeout time.Duration
}

// Transport is an http.RoundTripper that speaks fulcrum's HTTP binding
// protocol. Send calls to a group's front door URL; the Transport keeps one
// binding per front door and sends later calls straight to the bound
// replica. Safe for concurrent use.
type Transport struct {
	base http.RoundTripper
	id   string
	// idValue is the Fulcrum-Client header's value, id; read-only.
	idValue []string
	maxHops int
	maxBody int64
	timeout time.Duration
	log     *slog.Logger
	doors   doors
	// seq numbers the calls through front doors (Fulcrum-Sequence).
	seq *sequencer
	// replicated is Options.Replicated; repl the front doors learned to
	// be replicated.
	replicated bool
	repl       replicatedDoors
	// sets maps each front door of Options.FrontDoors to its set;
	// read-only.
	sets map[doorKey]*doorSet
	// optsErr is why Options.FrontDoors is invalid; every call returns it.
	optsErr error
}

// NewTransport returns a Transport for opts.
func NewTransport(opts Options) *Transport {
	t := &Transport{
		base:    opts.Base,
		id:      opts.ClientID,
		maxHops: opts.MaxHops,
		maxBody: opts.MaxBufferedBody,
		timeout: max(opts.Timeout, 0),
		log:     opts.Logger,
		seq:     newSequencer(),

		replicated: opts.Replicated,
	}
	if t.base == nil {
		t.base = defaultBase()
	}
	if t.id == "" {
		t.id = rand.Text()
	}
	t.idValue = []string{t.id}
	if t.maxHops <= 0 {
		t.maxHops = DefaultMaxHops
	}
	switch {
	case t.maxBody == 0:
		t.maxBody = DefaultMaxBufferedBody
	case t.maxBody < 0:
		t.maxBody = -1
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	sets, err := newDoorSets(opts.FrontDoors)
	if err != nil {
		t.optsErr = fmt.Errorf("%w: %w", errFrontDoors, err)
	}
	t.sets = sets
	return t
}

// defaultBase is Options.Base's default: a clone of http.DefaultTransport,
// or the shared one if a program replaced it with a RoundTripper that
// cannot be cloned.
func defaultBase() http.RoundTripper {
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		return d.Clone()
	}
	return http.DefaultTransport
}

// NewHTTPClient returns an *http.Client whose Transport is
// NewTransport(opts). Bound its calls with Options.Timeout rather than the
// Client's Timeout (see Options.Timeout).
func NewHTTPClient(opts Options) *http.Client {
	return &http.Client{Transport: NewTransport(opts)}
}

// ClientID returns the id the Transport sends as Fulcrum-Client.
func (t *Transport) ClientID() string { return t.id }

// Binding returns the current binding of the front door at frontDoor (a
// URL with the front door's scheme and host), and false if there is none.
func (t *Transport) Binding(frontDoor string) (Binding, bool) {
	u, err := url.Parse(frontDoor)
	if err != nil {
		return Binding{}, false
	}
	d := t.doors.get(t.canonical(keyOf(u)))
	if d == nil {
		return Binding{}, false
	}
	b := d.binding.Load()
	if b == nil {
		return Binding{}, false
	}
	return b.Binding, true
}

// Unbind drops the binding of the front door at frontDoor: the next call
// goes through the front door again.
func (t *Transport) Unbind(frontDoor string) {
	u, err := url.Parse(frontDoor)
	if err != nil {
		return
	}
	if d := t.doors.get(t.canonical(keyOf(u))); d != nil {
		d.binding.Store(nil)
	}
}

// CloseIdleConnections closes the idle connections of the base transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req to the replica bound for req's front door, or to the
// front door when there is no binding, and follows the binding protocol:
//
//   - a front door's 307 with Fulcrum-Group and Fulcrum-Replica binds the
//     client and the call goes on to the replica;
//   - a replica's 307 with Fulcrum-Rebind: 1 drops the binding and the call
//     goes back through the front door;
//   - a failure to connect to the replica (nothing was sent) drops the
//     binding and the call goes back through the front door; any other
//     failure drops the binding and is returned, since the call may have
//     run;
//   - a 503 from the replica drops the binding and is returned;
//   - a 503 from a front door that has bound this client before (so it
//     redirects) and that names the group in Fulcrum-Group (so the 503 is
//     its own, not a proxied replica's) is retried once;
//   - with Options.FrontDoors, a call the front door provably did not run
//     (see Options.FrontDoors) goes to the group's next front door;
//   - to a replicated group (one of its front door's answers carried
//     Fulcrum-Position, or Options.Replicated), a call that failed after
//     it was sent (a transport error, an answer cut short) or got a 503
//     with Retry-After goes unchanged — the same Fulcrum-Session,
//     Fulcrum-Sequence and body — to the next front door: each once per
//     call, a lone front door twice after a transport error. The group's
//     log deduplicates it.
//
// A call is sent again only when it provably did not run, or to a
// replicated group that deduplicates it, so no call runs twice. The body
// follows redirects when the request has GetBody or the body fits in
// Options.MaxBufferedBody; otherwise the redirect is returned to the
// caller.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.roundTrip(req.Context(), req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.roundTrip(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = newCancelBody(resp.Body, cancel)
	return resp, nil
}

// roundTrip is RoundTrip with the attempts made under ctx (req's context,
// or one with Options.Timeout's deadline).
func (t *Transport) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	if t.optsErr != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, t.optsErr
	}
	body, err := newReplay(req, t.maxBody)
	if err != nil {
		return nil, err
	}
	defer body.close()
	key := keyOf(req.URL)
	set := t.sets[key]
	var via int32 // the index in set of the front door a call goes to
	tried := 1    // the front doors of set tried in this call
	if set != nil {
		key = set.keys[0]
		via = set.current.Load()
	}
	door := t.doors.get(key)
	var bound *binding
	if door != nil {
		bound = door.binding.Load()
	}
	retried503 := false
	unreachable := "" // the binding the client could not connect to
	leaving := ""     // the binding a replica sent the client back from
	var id identity   // the call's identity, made at its first front door attempt
	named := false    // id is made
	for hop := 0; ; hop++ {
		if hop > t.maxHops {
			return nil, fmt.Errorf("%w: %d for %s %s", ErrTooManyHops, t.maxHops, req.Method, req.URL.Redacted())
		}
		var to *doorKey
		if set != nil && bound == nil {
			to = &set.keys[via]
		}
		if bound == nil && !named {
			id, named = t.identityOf(req), true
		}
		out, err := t.attempt(ctx, req, bound, to, &body, id, unreachable, leaving)
		if err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(out)

		if bound != nil { // the replica answered, or failed to
			switch {
			case err != nil:
				if ctx.Err() != nil {
					return nil, err
				}
				door.drop(bound)
				if !notSent(err) || !body.canReplay() {
					t.log.Debug("fulcrum: call to bound replica failed; binding dropped", "group", bound.Group, "replica", bound.Replica, "err", err)
					return nil, err
				}
				t.log.Debug("fulcrum: bound replica unreachable; rebinding through the front door", "group", bound.Group, "replica", bound.Replica, "err", err)
				unreachable = bound.header
				bound = nil
				continue
			case isRebind(resp):
				door.drop(bound)
				t.log.Debug("fulcrum: replica sent the client back; rebinding", "group", bound.Group, "replica", bound.Replica)
				if !body.canReplay() {
					return resp, nil
				}
				discard(resp)
				leaving = bound.header
				bound = nil
				continue
			case resp.StatusCode == http.StatusServiceUnavailable:
				door.drop(bound)
				t.log.Debug("fulcrum: replica unavailable; binding dropped", "group", bound.Group, "replica", bound.Replica)
			}
			return resp, nil
		}

		// The front door answered (or a host not known as one).
		repl := t.replicated
		if err == nil && isOrdered(resp) {
			t.repl.learn(key)
			repl = true
		} else if !repl {
			repl = t.repl.known(key)
		}
		if repl && err == nil {
			// A reply cut short is a transport error, to be re-sent.
			if rerr := readWhole(resp, out.URL.Host, t.maxBody); rerr != nil {
				resp, err = nil, rerr
			}
		}
		ndoors := 1
		if set != nil {
			ndoors = len(set.keys)
		}
		again := false
		switch {
		case !body.canReplay() || ctx.Err() != nil:
		case set != nil && tried < ndoors &&
			(err != nil && (notSent(err) || door != nil) || err == nil && ownUnavailable(resp)):
			// Provably not run — not sent, refused by the front door
			// itself, or lost by a front door that redirects (it has
			// bound this client: it runs no call).
			again = true
		case repl && err != nil:
			// A replicated group deduplicates the call when it comes
			// again unchanged. A lone front door gets a second try.
			again = tried < max(ndoors, 2)
		case repl:
			again = tried < ndoors && retryLater(resp)
		}
		if again { // so the next front door of the group
			if err == nil {
				discard(resp)
			}
			t.log.Debug("fulcrum: front door unavailable; trying the next", "front_door", out.URL.Host, "replicated", repl, "err", err)
			if set != nil {
				via = (via + 1) % int32(len(set.keys))
			}
			tried++
			hop-- // front doors tried are bounded by the set, not MaxHops
			continue
		}
		if err != nil {
			return nil, err
		}
		if set != nil {
			set.current.Store(via)
		}
		switch {
		case resp.StatusCode == http.StatusTemporaryRedirect:
			nb, ok := bindingFrom(resp, out.URL)
			if !ok {
				return resp, nil // not a binding redirect
			}
			if door == nil {
				door = t.doors.getOrAdd(key)
			}
			door.binding.Store(nb)
			t.repl.forget(key) // it redirects: not (or no longer) replicated
			t.log.Debug("fulcrum: bound", "group", nb.Group, "replica", nb.Replica, "url", nb.URL)
			if !body.canReplay() {
				return resp, nil
			}
			discard(resp)
			bound = nb
			continue
		case resp.StatusCode == http.StatusServiceUnavailable && door != nil && !retried503 && body.canReplay() &&
			resp.Header.Get(protocol.HeaderGroup) != "":
			retried503 = true
			discard(resp)
			continue
		}
		return resp, nil
	}
}

// attempt builds the request of one attempt: to the replica of b, or to
// the front door when b is nil (door, when set, in place of the one req's
// URL names) with the call's identity id (Fulcrum-Session and
// Fulcrum-Sequence go to front doors only). unreachable, when set, is the
// binding the client could not connect to; the front door is told so that
// it binds the client elsewhere. leaving, when set, is the binding a replica sent the
// client back from; the front door is told so that it counts the move.
func (t *Transport) attempt(ctx context.Context, req *http.Request, b *binding, door *doorKey, body *replay, id identity, unreachable, leaving string) (*http.Request, error) {
	rc, err := body.next()
	if err != nil {
		return nil, err
	}
	// A shallow copy, as req.WithContext makes: the base transport only
	// reads the URL, the header's values and the rest, so they are shared
	// with req; only the header map is new, since the binding's headers
	// are set in it.
	out := req.WithContext(ctx)
	out.Body = rc
	if body.get != nil {
		out.GetBody = body.get
	}
	if body.length >= 0 {
		out.ContentLength = body.length
	}
	h := make(http.Header, len(req.Header)+5)
	for k, v := range req.Header {
		h[k] = v
	}
	out.Header = h
	if b == nil && door != nil && (door.scheme != req.URL.Scheme || door.host != req.URL.Host) {
		u := *req.URL
		u.Scheme, u.Host = door.scheme, door.host
		out.URL = &u
		out.Host = ""
	}
	switch {
	case b != nil:
		out.URL = b.rewrite(req.URL)
		out.Host = ""
		h[protocol.HeaderBinding] = b.headerValue
	case unreachable != "":
		h[protocol.HeaderBinding] = []string{unreachable}
		h[protocol.HeaderRebind] = []string{protocol.RebindUnreachable}
	case leaving != "":
		h[protocol.HeaderBinding] = []string{leaving}
		h[protocol.HeaderRebind] = []string{"1"}
	default:
		delete(h, protocol.HeaderBinding)
	}
	if b == nil {
		id.set(h)
	}
	h[protocol.HeaderClient] = t.idValue
	return out, nil
}

// isRebind reports whether resp is a replica sending the client back.
func isRebind(resp *http.Response) bool {
	return resp.StatusCode == http.StatusTemporaryRedirect && resp.Header.Get(protocol.HeaderRebind) == "1"
}

// notSent reports whether err proves that the request never left: the
// connection could not be made (refused, unreachable, no such host).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// discard drains a little of a response that is not returned, so that its
// connection can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
}

// canonical returns the key under which the binding of the front door k is
// kept: its set's first front door, or k itself.
func (t *Transport) canonical(k doorKey) doorKey {
	if set := t.sets[k]; set != nil {
		return set.keys[0]
	}
	return k
}
