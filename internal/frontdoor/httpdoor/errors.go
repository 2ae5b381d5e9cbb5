package httpdoor

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Error codes of the front door's JSON error bodies.
const (
	CodeNoReplica      = "no_replica"
	CodeOverloaded     = "overloaded"
	CodeBadRequest     = "bad_request"
	CodeMethod         = "method_not_allowed"
	CodeBadGateway     = "bad_gateway"
	CodeGatewayTimeout = "gateway_timeout"
	CodeLoopDetected   = "loop_detected"
	// CodeGone: the object an affinity rule pinned was lost with its
	// replica (410); CodeAffinity: its replica cannot take the call on
	// this instance (503; docs/affinity.md).
	CodeGone     = "gone"
	CodeAffinity = "affinity_unavailable"
)

var (
	errMethod    = errors.New("httpdoor: CONNECT is not served by a front door")
	errBadTarget = errors.New("httpdoor: request target must be a path")
	errBodyRead  = errors.New("httpdoor: request body already sent, the call cannot be replayed")
)

// ErrorBody is the JSON body of every error the front doors of HTTP
// groups (this one and the replicated bridge) answer themselves.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is what an error body says.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Group   string `json:"group"`
	Reason  string `json:"reason,omitempty"`
}

// writeError answers err with its status and a JSON body. snap may be nil.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, snap *frontdoor.Snapshot, err error) {
	WriteAnswer(w, r, errorAnswer(snap, err))
}

// WriteAnswer writes the error answer a: its status, its JSON body (none
// to a HEAD request) and the headers that go with them (Fulcrum-Group, and
// Retry-After: 1 on 503). Headers w already has set are kept.
func WriteAnswer(w http.ResponseWriter, r *http.Request, a lean.Answer) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(a.Body)))
	if a.Group != "" {
		h.Set(protocol.HeaderGroup, a.Group)
	}
	if a.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(a.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.Body)
	}
}

// answer is an error answer of the front door: its status, its group and
// its JSON body (newline-terminated).
type answer = lean.Answer

// errorAnswer is the answer to err. snap may be nil.
func errorAnswer(snap *frontdoor.Snapshot, err error) answer {
	status, d := describe(snap, err)
	return DetailAnswer(snap, status, d)
}

// DetailAnswer is the error answer with status and detail d, in the group
// of snap (which may be nil).
func DetailAnswer(snap *frontdoor.Snapshot, status int, d ErrorDetail) lean.Answer {
	if snap != nil {
		d.Group = snap.Group
	}
	body, _ := json.Marshal(ErrorBody{Error: d})
	return answer{Status: status, Group: d.Group, Body: append(body, '\n')}
}

// describe maps an error to a status and error detail with errors.Is.
func describe(snap *frontdoor.Snapshot, err error) (int, ErrorDetail) {
	var df *frontdoor.UnreachableError
	var bad *lean.BadRequestError
	var ae *frontdoor.AffinityError
	switch {
	case errors.As(err, &ae) && ae.Decision.Gone:
		return http.StatusGone, ErrorDetail{Code: CodeGone,
			Message: "the object was lost with its replica", Reason: ae.Error()}
	case errors.As(err, &ae):
		return http.StatusServiceUnavailable, ErrorDetail{Code: CodeAffinity,
			Message: "the replica this call is pinned to cannot take it now", Reason: ae.Error()}
	case errors.Is(err, errNotReady):
		return http.StatusServiceUnavailable, ErrorDetail{Code: CodeNoReplica,
			Message: "no replica can serve this request", Reason: "the group is starting"}
	case errors.As(err, &df) && errors.Is(err, frontdoor.ErrNoReplica):
		return http.StatusServiceUnavailable, ErrorDetail{Code: CodeNoReplica,
			Message: "no replica can serve this request", Reason: df.Error()}
	case errors.Is(err, frontdoor.ErrNoReplica):
		return http.StatusServiceUnavailable, ErrorDetail{Code: CodeNoReplica,
			Message: "no replica can serve this request", Reason: membershipReason(snap)}
	case errors.Is(err, frontdoor.ErrOverloaded):
		reason := "every replica is at its in-flight limit"
		var qe *frontdoor.QueueError
		if errors.As(err, &qe) {
			reason = qe.Error()
		} else if snap != nil {
			reason = fmt.Sprintf("every active replica has %d calls in flight (max_inflight)", snap.MaxInflight)
		}
		return http.StatusServiceUnavailable, ErrorDetail{Code: CodeOverloaded,
			Message: "no replica can take another call now", Reason: reason}
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, ErrorDetail{Code: CodeMethod, Message: err.Error()}
	case errors.As(err, &bad):
		return cmp.Or(bad.Status, http.StatusBadRequest), ErrorDetail{Code: CodeBadRequest, Message: bad.Message}
	case errors.Is(err, errBadTarget):
		return http.StatusBadRequest, ErrorDetail{Code: CodeBadRequest, Message: err.Error()}
	case errors.Is(err, frontdoor.ErrLoop):
		return http.StatusLoopDetected, ErrorDetail{Code: CodeLoopDetected,
			Message: "the request came back to the balancer that proxied it",
			Reason:  "a Via field names this balancer: a replica address points at one of its own front doors"}
	case errors.Is(err, frontdoor.ErrCallTimeout):
		return http.StatusGatewayTimeout, ErrorDetail{Code: CodeGatewayTimeout,
			Message: "the replica did not answer in time", Reason: err.Error()}
	default:
		return http.StatusBadGateway, ErrorDetail{Code: CodeBadGateway,
			Message: "the call to the replica failed", Reason: err.Error()}
	}
}

// membershipReason says why no member is eligible, e.g. "0 of 3 replicas
// active (2 down, 1 draining)".
func membershipReason(snap *frontdoor.Snapshot) string {
	if snap == nil {
		return "the group is starting"
	}
	if len(snap.Members) == 0 {
		return "the group has no replicas"
	}
	counts := map[string]int{}
	for _, m := range snap.Members {
		counts[m.State]++
	}
	states := make([]string, 0, len(counts))
	for st := range counts {
		if st != protocol.StateActive {
			states = append(states, st)
		}
	}
	sort.Strings(states)
	parts := make([]string, len(states))
	for i, st := range states {
		parts[i] = fmt.Sprintf("%d %s", counts[st], st)
	}
	msg := fmt.Sprintf("%d of %d replicas active", len(snap.Eligible), len(snap.Members))
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, ", ") + ")"
	}
	return msg
}
