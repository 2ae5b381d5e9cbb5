package replagent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of HTTPOptions.
const (
	// DefaultMaxReply bounds a reply's body.
	DefaultMaxReply = 16 << 20
	// DefaultMaxState bounds a state (GET /fulcrum/state).
	DefaultMaxState = 256 << 20
	// DefaultDeliverTimeout bounds one delivery.
	DefaultDeliverTimeout = time.Minute
)

// CodeReplyTooLarge is the error code of the reply an agent posts in place
// of a server's reply whose body is above its limit: every replica makes
// the same one, so they do not diverge.
const CodeReplyTooLarge = "reply_too_large"

// HTTPOptions configure an HTTP deliverer.
type HTTPOptions struct {
	// Client talks to the server. Default: two clients of its own, one
	// for the deliveries and one for the state calls, that follow no
	// redirects (a reply is the server's, 3xx included) and ask for no
	// compression of their own (a reply's body is passed on as the server
	// wrote it).
	Client *http.Client
	// MaxReply bounds a reply's body, default DefaultMaxReply. A larger
	// reply is replaced by a 502 with code CodeReplyTooLarge (the server
	// has applied the request; every replica answers the same).
	MaxReply int64
	// MaxState bounds a state, default DefaultMaxState.
	MaxState int64
	// DeliverTimeout bounds one delivery, default DefaultDeliverTimeout;
	// a server that takes longer stops the agent.
	DeliverTimeout time.Duration
}

// HTTPDeliverer delivers ordered HTTP requests to an unmodified HTTP server
// at a base URL. Safe for concurrent use, though the agent delivers one
// request at a time.
type HTTPDeliverer struct {
	base *url.URL
	opts HTTPOptions
	// deliveries carries the delivered requests only (opts.Client when
	// given); opts.Client the state calls.
	deliveries *http.Client
}

// NewHTTP returns a deliverer to the server at target, an absolute http(s)
// base URL.
func NewHTTP(target string, opts HTTPOptions) (*HTTPDeliverer, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("replagent: target %q: must be an absolute http:// or https:// URL without query or fragment", target)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	deliveries := opts.Client
	if opts.Client == nil {
		opts.Client = newServerClient(nil)
		deliveries = newServerClient(func(c net.Conn) net.Conn { return serverConn{c} })
	}
	if opts.MaxReply <= 0 {
		opts.MaxReply = DefaultMaxReply
	}
	if opts.MaxState <= 0 {
		opts.MaxState = DefaultMaxState
	}
	if opts.DeliverTimeout <= 0 {
		opts.DeliverTimeout = DefaultDeliverTimeout
	}
	return &HTTPDeliverer{base: u, opts: opts, deliveries: deliveries}, nil
}

// newServerClient is a client to the server that follows no redirects (a
// reply is the server's, 3xx included) and asks for no compression of its
// own (a reply's body is passed on as the server wrote it); wrap, when not
// nil, wraps each connection it opens.
func newServerClient(wrap func(net.Conn) net.Conn) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	if wrap != nil {
		dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return wrap(c), nil
		}
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// serverConn is a connection that carries delivered requests (and
// nothing else): every byte of a request the agent delivers is written to
// the server through its Write.
type serverConn struct{ net.Conn }

// Write writes (part of) a delivered request to the server.
func (c serverConn) Write(p []byte) (int, error) {
	// MEAD's fault point 2: the agent dies while writing a request to
	// its server (docs/testing.md).
	// gofail: var replAgentWritingRequest struct{}
	// failpoint.Kill()
	return c.Conn.Write(p)
}

// hopHeaders are not passed to the server (the bridge drops them already).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// Deliver sends req to the server with the stamps Fulcrum-Time (RFC 3339
// with nanoseconds, UTC), Fulcrum-Seed and Fulcrum-Position, and reads the
// whole reply.
func (d *HTTPDeliverer) Deliver(ctx context.Context, pos uint64, req *protocol.OrderedRequest) (protocol.ReplicaReply, error) {
	hr, err := d.request(ctx, pos, req)
	if err != nil {
		return protocol.ReplicaReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.DeliverTimeout)
	defer cancel()
	hr = hr.WithContext(ctx)
	resp, err := d.deliveries.Do(hr)
	if err != nil {
		return protocol.ReplicaReply{}, fmt.Errorf("replagent: deliver the entry at position %d (%s %s): %w", pos, req.Method, req.Target, err)
	}
	defer resp.Body.Close()
	return d.readReply(pos, req, resp)
}

// request builds the http.Request of the entry at pos.
func (d *HTTPDeliverer) request(ctx context.Context, pos uint64, req *protocol.OrderedRequest) (*http.Request, error) {
	if req.Kind != protocol.KindHTTP {
		return nil, fmt.Errorf("replagent: the entry at position %d is of kind %q: an HTTP server takes only kind %q", pos, req.Kind, protocol.KindHTTP)
	}
	if req.Method == "" || !strings.HasPrefix(req.Target, "/") {
		return nil, fmt.Errorf("replagent: the entry at position %d has method %q and target %q: want a method and a target starting with /", pos, req.Method, req.Target)
	}
	ref, err := url.ParseRequestURI(req.Target)
	if err != nil {
		return nil, fmt.Errorf("replagent: the entry at position %d has target %q: %w", pos, req.Target, err)
	}
	u := *d.base
	u.Path = d.base.Path + ref.Path
	u.RawPath = ""
	if ref.RawPath != "" {
		u.RawPath = d.base.EscapedPath() + ref.RawPath
	}
	u.RawQuery = ref.RawQuery
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("replagent: the entry at position %d (%s %s): %w", pos, req.Method, req.Target, err)
	}
	hr.Header = req.Header.Clone()
	if hr.Header == nil {
		hr.Header = make(http.Header)
	}
	for _, h := range hopHeaders {
		hr.Header.Del(h)
	}
	hr.Header.Set(protocol.HeaderTime, req.Time.UTC().Format(time.RFC3339Nano))
	hr.Header.Set(protocol.HeaderSeed, strconv.FormatUint(req.Seed, 10))
	hr.Header.Set(protocol.HeaderPosition, strconv.FormatUint(pos, 10))
	return hr, nil
}

// readReply reads the server's whole reply to the entry at pos.
func (d *HTTPDeliverer) readReply(pos uint64, req *protocol.OrderedRequest, resp *http.Response) (protocol.ReplicaReply, error) {
	// MEAD's fault point 3: the agent dies while reading its server's
	// reply (docs/testing.md).
	// gofail: var replAgentReadingReply struct{}
	// failpoint.Kill()
	body, err := io.ReadAll(io.LimitReader(resp.Body, d.opts.MaxReply+1))
	if err != nil {
		return protocol.ReplicaReply{}, fmt.Errorf("replagent: read the reply to the entry at position %d (%s %s): %w", pos, req.Method, req.Target, err)
	}
	if int64(len(body)) > d.opts.MaxReply {
		msg := fmt.Sprintf("the reply to the request at position %d is larger than the replicas' limit of %d bytes", pos, d.opts.MaxReply)
		return protocol.ReplicaReply{Position: pos, Status: http.StatusBadGateway,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: errorBody(CodeReplyTooLarge, msg)}, nil
	}
	h := resp.Header.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
	}
	h.Del("Date") // differs between replicas, and the bridge writes its own
	return protocol.ReplicaReply{Position: pos, Status: resp.StatusCode, Header: h, Body: body}, nil
}

// State returns the server's state, GET /fulcrum/state; ErrNoState when it
// answers 404, 405 or 501.
func (d *HTTPDeliverer) State(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.stateURL(), nil)
	if err != nil {
		return nil, fmt.Errorf("replagent: get state: %w", err)
	}
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("replagent: get state: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return nil, fmt.Errorf("%w: GET %s answered %d", ErrNoState, protocol.StatePath, resp.StatusCode)
	default:
		return nil, fmt.Errorf("replagent: get state: GET %s answered %d: %s", protocol.StatePath, resp.StatusCode, excerpt(resp.Body))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, d.opts.MaxState+1))
	if err != nil {
		return nil, fmt.Errorf("replagent: get state: %w", err)
	}
	if int64(len(b)) > d.opts.MaxState {
		return nil, fmt.Errorf("replagent: get state: more than %d bytes", d.opts.MaxState)
	}
	return b, nil
}

// SetState replaces the server's state, PUT /fulcrum/state with the state
// as the body (Content-Type application/octet-stream: the state is opaque
// to the agent); any 2xx is success.
func (d *HTTPDeliverer) SetState(ctx context.Context, state []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, d.stateURL(), bytes.NewReader(state))
	if err != nil {
		return fmt.Errorf("replagent: set state: %w", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("replagent: set state: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("replagent: set state: PUT %s answered %d: %s", protocol.StatePath, resp.StatusCode, excerpt(resp.Body))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return nil
}

// CanCheckpoint reports whether GET /fulcrum/state answers with a state.
func (d *HTTPDeliverer) CanCheckpoint(ctx context.Context) bool {
	_, err := d.State(ctx)
	return err == nil
}

// Close releases the clients' idle connections.
func (d *HTTPDeliverer) Close() error {
	d.deliveries.CloseIdleConnections()
	d.opts.Client.CloseIdleConnections()
	return nil
}

func (d *HTTPDeliverer) stateURL() string {
	u := *d.base
	u.Path = d.base.Path + protocol.StatePath
	return u.String()
}

// excerpt is the start of an error answer, for error messages.
func excerpt(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 512))
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(no body)"
	}
	return s
}

var _ Deliverer = (*HTTPDeliverer)(nil)
