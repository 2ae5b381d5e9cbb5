package balancer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Outcalls of a replicated group (replicated callers; docs/replication.md):
// when the replicas' servers call another service, every replica's agent
// sends its copy of the call to POST /v1/groups/{name}/outcalls; the
// group's replhub.Outcalls forwards the first copy of a key to the callee,
// with the key as Idempotency-Key, and answers every copy with the
// callee's reply. The forwarding dials with Options.Dial and is bounded by
// the group's timeouts.request.

// MaxOutcallReplyBytes bounds the callee's reply body an outcall keeps.
const MaxOutcallReplyBytes = 16 << 20

// Outcall answers one replica's copy of an outgoing call of replicated
// group name. Errors: ReplicatedHub's, a *protocol.FieldError for a bad
// call (its key, method or URL), ctx's error.
func (b *Balancer) Outcall(ctx context.Context, name string, c protocol.Outcall) (protocol.OutcallReply, error) {
	if _, _, err := b.ReplicatedHub(name); err != nil {
		return protocol.OutcallReply{}, err
	}
	if _, _, err := protocol.ParseOutcallKey(c.Key, name); err != nil {
		return protocol.OutcallReply{}, err
	}
	if c.Method == protocol.OutcallMethodGIOP {
		if err := checkGIOPOutcall(c); err != nil {
			return protocol.OutcallReply{}, err
		}
	} else if c.Method == "" || !validMethod(c.Method) {
		return protocol.OutcallReply{}, &protocol.FieldError{Field: "method", Value: c.Method, Allowed: "must be an HTTP method such as POST, or GIOP"}
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return protocol.OutcallReply{}, &protocol.FieldError{Field: "url", Value: c.URL, Allowed: "must be an absolute http:// or https:// URL"}
	}
	g, err := b.group(name)
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	g.mu.Lock()
	run := g.hub
	g.mu.Unlock()
	if run == nil {
		return protocol.OutcallReply{}, fmt.Errorf("%w: group %s", ErrHubNotRunning, name)
	}
	return run.outcalls.Call(ctx, c)
}

// forwardOutcall sends the first copy of an outcall to its callee.
func (g *group) forwardOutcall(ctx context.Context, key string, c protocol.Outcall) (protocol.OutcallReply, error) {
	g.mu.Lock()
	timeout := g.spec.Timeouts.Request.D()
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if c.Method == protocol.OutcallMethodGIOP {
		return g.forwardGIOPOutcall(ctx, key, c)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	for k, vs := range c.Header {
		if hopByHop(k) {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set(protocol.HeaderIdempotencyKey, key)
	resp, err := g.b.outcallClient.Do(req)
	if err != nil {
		return protocol.OutcallReply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutcallReplyBytes+1))
	if err != nil {
		return protocol.OutcallReply{}, fmt.Errorf("reading the reply: %w", err)
	}
	if len(body) > MaxOutcallReplyBytes {
		return protocol.OutcallReply{}, fmt.Errorf("the reply is larger than %d bytes", MaxOutcallReplyBytes)
	}
	h := resp.Header.Clone()
	for k := range h {
		if hopByHop(k) {
			h.Del(k)
		}
	}
	return protocol.OutcallReply{Status: resp.StatusCode, Header: h, Body: body}, nil
}

// hopByHop reports whether header k belongs to one connection only.
func hopByHop(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length":
		return true
	}
	return false
}

// validMethod reports whether m is an HTTP token.
func validMethod(m string) bool {
	return m != "" && !strings.ContainsFunc(m, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	})
}

// newOutcallClient is the client outcalls are forwarded with: its own
// connections, dialled with dial, verifying https:// callees with the
// system roots; each call bounded by its group's timeouts.request.
func newOutcallClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dial
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
