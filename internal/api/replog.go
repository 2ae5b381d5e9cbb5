package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The log routes of a replicated group (docs/replication.md), for its
// replicas' agents: the log stream, applied positions, replies and
// outcalls (outcalls.go). They take only the token of a replica of the
// group (access groupReplica, checked even when no admin token is set;
// the admin token is refused: applied positions drive the log's trimming,
// and only a replica may say what it has applied). Before the token they
// answer 404 for an unknown group, 409 not_replicated for a group of
// another binding and 503 not_ready while the group's log is not open on
// this instance.

// Error codes of the log routes.
const (
	codeNotReplicated = "not_replicated" // 409: the group's binding is not replicated
)

// Bounds of the log routes' bodies.
const (
	// maxAppliedBytes bounds an applied report.
	maxAppliedBytes = 4 << 10
	// replyBatchFactor and replyBatchSlack bound a reply batch:
	// replyBatchFactor × max_payload + replyBatchSlack bytes, room for a
	// few replies of max_payload each in base64 and their JSON.
	replyBatchFactor = 6
	replyBatchSlack  = 64 << 10
)

// replicaKey is the context key of the replica a groupReplica route was
// called by.
type replicaKey struct{}

// replicaOf is the id of the replica whose token called r (groupReplica
// routes).
func replicaOf(r *http.Request) string {
	id, _ := r.Context().Value(replicaKey{}).(string)
	return id
}

// guardReplica checks a groupReplica route: the group, then the token of a
// replica of it. It returns r with the replica's id, or false after
// answering.
func (s *server) guardReplica(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	name := r.PathValue("name")
	if _, _, err := s.b.ReplicatedHub(name); err != nil && !errors.Is(err, balancer.ErrHubNotRunning) {
		s.replicatedFail(w, r, err)
		return nil, false
	}
	need := fmt.Sprintf("the log and outcall routes of group %s take only the token of a replica of that group, as \"Authorization: Bearer <replica token>\"", name)
	token := bearer(r)
	switch {
	case token == "":
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: need})
		return nil, false
	case s.auth.isAdmin(token):
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: "the admin token is not accepted here: " + need + " (applied positions drive the log's trimming)"})
		return nil, false
	}
	id, ok := s.b.ReplicaOf(name, token)
	if !ok {
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: "the token is not valid here: " + need})
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), replicaKey{}, id)), true
}

// replicatedFail answers the errors of balancer.ReplicatedHub.
func (s *server) replicatedFail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, balancer.ErrNotReplicated):
		writeError(w, http.StatusConflict, apiError{Code: codeNotReplicated, Message: message(err) + "; the log routes serve only groups with binding replicated"})
	case errors.Is(err, balancer.ErrHubNotRunning):
		writeError(w, http.StatusServiceUnavailable, apiError{Code: codeNotReady, Message: message(err)})
	default:
		s.fail(w, r, err)
	}
}

// logStream serves GET /v1/groups/{name}/log?from=P: the group's log from
// position P (default 0, the first) as NDJSON, one protocol.LogEvent per
// line, each flushed at once, until the hub ends the stream or the client
// goes away.
func (s *server) logStream(w http.ResponseWriter, r *http.Request) {
	var from uint64
	if v, ok := r.URL.Query()["from"]; ok {
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil || len(v) > 1 {
			writeError(w, http.StatusBadRequest, apiError{Code: codeInvalidValue, Message: fmt.Sprintf("from: invalid value %q, must be a log position: a decimal integer in [0, %d], given once", v[0], uint64(1<<64-1)), Field: "from", Allowed: "a log position: a decimal integer in [0, 18446744073709551615], given once"})
			return
		}
		from = n
	}
	hub, _, err := s.b.ReplicatedHub(r.PathValue("name"))
	if err != nil {
		s.replicatedFail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	// A stream is meant to last: the server's write timeout must not cut
	// it; the hub's heartbeats detect dead clients.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.log.Debug("log stream: cannot clear the write deadline", "err", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	out := bufio.NewWriter(w)
	enc := json.NewEncoder(out) // one line per event
	for ev := range hub.Stream(r.Context(), replicaOf(r), from) {
		if err := enc.Encode(ev); err != nil {
			s.log.Error("log stream: cannot encode an event", "group", r.PathValue("name"), "type", ev.Type, "err", err)
			return
		}
		if out.Flush() != nil || rc.Flush() != nil {
			return
		}
	}
}

// logApplied serves POST /v1/groups/{name}/log/applied.
func (s *server) logApplied(w http.ResponseWriter, r *http.Request) {
	hub, _, err := s.b.ReplicatedHub(r.PathValue("name"))
	if err != nil {
		s.replicatedFail(w, r, err)
		return
	}
	var rep protocol.AppliedReport
	if fe := decodeJSON(w, r, maxAppliedBytes, &rep); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	hub.Applied(replicaOf(r), rep)
	w.WriteHeader(http.StatusNoContent)
}

// logReplies serves POST /v1/groups/{name}/log/replies. The body is
// bounded by replyBatchFactor × max_payload + replyBatchSlack.
func (s *server) logReplies(w http.ResponseWriter, r *http.Request) {
	hub, rs, err := s.b.ReplicatedHub(r.PathValue("name"))
	if err != nil {
		s.replicatedFail(w, r, err)
		return
	}
	var b protocol.ReplyBatch
	if fe := decodeJSON(w, r, replyBatchLimit(rs), &b); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	for i, rp := range b.Replies {
		if rp.Position == 0 {
			writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{Field: fmt.Sprintf("replies[%d].position", i), Value: "0", Allowed: "must be the log position of the entry replied to, at least 1"}))
			return
		}
	}
	hub.Replies(replicaOf(r), b)
	w.WriteHeader(http.StatusNoContent)
}

// replyBatchLimit bounds a reply batch's body for a group of settings rs.
func replyBatchLimit(rs protocol.Replicated) int64 {
	return replyBatchFactor*rs.MaxPayload.Int64() + replyBatchSlack
}

// logAsk serves POST /v1/groups/{name}/log/ask: another instance of the
// cluster passes on a reply request (admin token), which this instance's
// streams of the group hand to their agents. 200 with an empty object.
func (s *server) logAsk(w http.ResponseWriter, r *http.Request) {
	var req protocol.ReplyRequest
	if fe := decodeJSON(w, r, maxAppliedBytes, &req); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	if req.Position == 0 {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{Field: "position", Value: "0", Allowed: "must be the log position whose reply is wanted, at least 1"}))
		return
	}
	if u, err := url.Parse(req.ReplyTo); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{Field: "reply_to", Value: req.ReplyTo, Allowed: "must be the asking instance's admin API base URL, http:// or https://"}))
		return
	}
	if err := s.b.AskFor(r.PathValue("name"), req); err != nil {
		s.replicatedFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}
