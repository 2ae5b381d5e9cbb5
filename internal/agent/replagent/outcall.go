package replagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Replicated callers (docs/agents.md): a server that calls another service
// while it applies an entry sends the call through its agent, as through
// an HTTP proxy (fulcrum backend relay --proxy http://<agent listen>). Every
// replica makes the same call; each agent posts its copy, keyed
// "<group>/<position>/<index>", to POST /v1/groups/{group}/outcalls, and
// the balancer calls the callee once with the key as Idempotency-Key and
// answers every copy with the callee's reply.

// DefaultMaxOutcall bounds the body of a call a server makes through its
// agent (Options.MaxOutcall).
const DefaultMaxOutcall = DefaultMaxPayload

// Outcaller posts one replica's copy of an outgoing call to the admin API
// at base; AdminClient is the HTTP one.
type Outcaller interface {
	PostOutcall(ctx context.Context, base string, c protocol.Outcall) (protocol.OutcallReply, error)
}

// entryCalls is the entry being delivered and how many outgoing calls its
// server has made so far.
type entryCalls struct {
	pos  uint64
	next atomic.Uint64
}

// IsOutcall reports whether r came to the agent's listener as to an HTTP
// proxy: an absolute-form request URI (http://host/path) or CONNECT.
func IsOutcall(r *http.Request) bool {
	return r.Method == http.MethodConnect || r.URL.IsAbs()
}

// RefuseOutcall answers a call that came through the agent's proxy while
// no entry is being delivered: 409 with code no_entry.
func RefuseOutcall(w http.ResponseWriter, r *http.Request, why string) {
	writeError(w, http.StatusConflict, "no_entry", fmt.Sprintf(
		"replagent: %s %s through the agent while %s: a replicated server's outgoing calls are keyed by the log entry it is applying, so they must be made while it applies one (not at start-up, on a timer or after replying)",
		r.Method, r.URL.Redacted(), why))
}

// serveOutcall serves a request that came as to an HTTP proxy (IsOutcall):
// an outgoing call of the server. While an entry is being delivered it is
// the entry's next call: posted to the admin URLs in order (the first that
// answers: every agent of the group is given them in the same order, so
// the copies meet at one instance) and answered with the callee's reply;
// 502 when no admin URL answers. Otherwise 409 (RefuseOutcall). CONNECT
// (an https:// callee) gets 405: the agent must read the call to key it,
// so a replicated server calls http:// callees.
func (a *Agent) serveOutcall(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		a.log.Warn("the server called an https:// callee through the agent: refused, replicated callers must call http:// callees", "host", r.Host)
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, "connect_refused", "replagent: CONNECT "+r.Host+": the agent must read an outgoing call to key it, so a replicated server calls its callees at http:// URLs through the agent (https:// would tunnel through it unread)")
		return
	}
	e := a.current.Load()
	if e == nil {
		RefuseOutcall(w, r, "no entry is being delivered")
		return
	}
	index := e.next.Add(1) - 1
	key := fmt.Sprintf("%s/%d/%d", a.opts.Group, e.pos, index)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.opts.MaxOutcall))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("replagent: outcall %s: the body is larger than %d bytes", key, a.opts.MaxOutcall))
			return
		}
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("replagent: outcall %s: reading the body: %v", key, err))
		return
	}
	h := r.Header.Clone()
	for _, k := range outcallDrop {
		h.Del(k)
	}
	c := protocol.Outcall{Key: key, Method: r.Method, URL: r.URL.String(), Header: h, Body: body}
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.DeliverTimeout)
	defer cancel()
	reply, err := a.outcall(ctx, c)
	if err != nil {
		a.log.Warn("an outgoing call reached no balancer", "key", key, "url", c.URL, "err", err)
		writeError(w, http.StatusBadGateway, "outcall_failed", err.Error())
		return
	}
	if reply.Status < 100 || reply.Status > 999 {
		reply.Status = http.StatusBadGateway
	}
	if reply.Error != "" {
		writeError(w, reply.Status, "outcall_failed", reply.Error)
		return
	}
	for k, vs := range reply.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" || k == "Connection" {
			continue
		}
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(reply.Body)))
	w.WriteHeader(reply.Status)
	_, _ = w.Write(reply.Body)
}

// ErrNoEntry is returned by Outcall when no entry is being delivered: a
// replicated server's outgoing calls are keyed by the entry it applies.
var ErrNoEntry = errors.New("replagent: no entry is being delivered (a replicated server's outgoing calls must be made while it applies one)")

// Outcall posts c, keyed here as the next outgoing call of the entry being
// delivered ("<group>/<position>/<index>"), to the admin URLs in order and
// returns the first answer: the path of outgoing calls that do not come
// through the agent's HTTP listener (a GIOP servant's, package giopout).
// It returns ErrNoEntry when no entry is being delivered, an error when no
// admin URL answered. The call is bounded by Options.DeliverTimeout.
func (a *Agent) Outcall(ctx context.Context, c protocol.Outcall) (protocol.OutcallReply, error) {
	e := a.current.Load()
	if e == nil {
		return protocol.OutcallReply{}, ErrNoEntry
	}
	c.Key = fmt.Sprintf("%s/%d/%d", a.opts.Group, e.pos, e.next.Add(1)-1)
	ctx, cancel := context.WithTimeout(ctx, a.opts.DeliverTimeout)
	defer cancel()
	return a.outcall(ctx, c)
}

// outcallDrop are the request headers that belong to the hop to the agent
// (the proxy), not to the call.
var outcallDrop = append([]string{"Proxy-Authorization", "Proxy-Connection"}, hopHeaders...)

// outcall posts c to the admin URLs in order and returns the first answer.
func (a *Agent) outcall(ctx context.Context, c protocol.Outcall) (protocol.OutcallReply, error) {
	if a.opts.Outcaller == nil {
		return protocol.OutcallReply{}, errors.New("replagent: this agent cannot post outgoing calls (no Outcaller)")
	}
	var errs []error
	for _, base := range a.opts.Admins {
		reply, err := a.opts.Outcaller.PostOutcall(ctx, base, c)
		if err == nil {
			return reply, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: outcall %s to %s: no admin URL to post it to", c.Key, c.URL)
	}
	return protocol.OutcallReply{}, fmt.Errorf("replagent: outcall %s to %s: no balancer answered: %w", c.Key, c.URL, errors.Join(errs...))
}
