package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Error codes of the bridge's JSON error bodies: httpdoor's, and those of
// replicated groups (protocol.CodePayloadTooLarge, CodeLogFull,
// CodeReplyExpired).
const (
	CodeNoReplica      = httpdoor.CodeNoReplica
	CodeOverloaded     = httpdoor.CodeOverloaded
	CodeBadRequest     = httpdoor.CodeBadRequest
	CodeMethod         = httpdoor.CodeMethod
	CodeBadGateway     = httpdoor.CodeBadGateway
	CodeGatewayTimeout = httpdoor.CodeGatewayTimeout
	// CodeLogUnavailable: the log failed (503); the request may or may not
	// have been appended: a client with a session sends it again.
	CodeLogUnavailable = "log_unavailable"
)

var (
	errNotReady  = errors.New("bridge: group has no snapshot yet")
	errMethod    = errors.New("bridge: CONNECT is not served by a front door")
	errBadTarget = errors.New("bridge: request target must be a path")
)

// BodyTooLargeError refuses a request whose body is above the group's
// max_payload before it is read whole (413).
type BodyTooLargeError struct {
	// Size is the body's Content-Length, or -1 when it came without one
	// and passed Max while read.
	Size int64
	Max  int64
}

func (e *BodyTooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("bridge: request body above %d bytes: max_payload is %d", e.Max, e.Max)
	}
	return fmt.Sprintf("bridge: request body of %d bytes: max_payload is %d", e.Size, e.Max)
}

// NotCaughtUpError says that no live replica applied a session's last
// write (Position) within the request timeout: a read-only call found
// nowhere to go (503).
type NotCaughtUpError struct {
	Position uint64
	// Live counts the eligible replicas, all behind.
	Live int
}

func (e *NotCaughtUpError) Error() string {
	return fmt.Sprintf("bridge: none of the %d live replicas applied position %d (the session's last write) within the request timeout", e.Live, e.Position)
}

// Unwrap makes it an ErrNoReplica.
func (e *NotCaughtUpError) Unwrap() error { return frontdoor.ErrNoReplica }

// bodyReadError is a request body that could not be read (400).
type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "bridge: reading the request body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

// proxyError is a read-only call the replica did not answer (502).
type proxyError struct{ err error }

func (e *proxyError) Error() string {
	return "bridge: read-only call to the replica failed: " + e.err.Error()
}
func (e *proxyError) Unwrap() error { return e.err }

// errorDetail is what the bridge's error bodies say: the shape of
// httpdoor's.
type errorDetail = httpdoor.ErrorDetail

// writeError answers err with its status and a JSON body, as httpdoor
// does; a reply expired also says its position (Fulcrum-Position). snap
// may be nil.
func writeError(w http.ResponseWriter, r *http.Request, snap *frontdoor.Snapshot, err error) {
	status, d := describe(snap, err)
	var exp *replhub.ReplyExpiredError
	if errors.As(err, &exp) {
		w.Header().Set(protocol.HeaderPosition, strconv.FormatUint(exp.Position, 10))
	}
	httpdoor.WriteAnswer(w, r, httpdoor.DetailAnswer(snap, status, d))
}

// describe maps an error to a status and an error detail.
func describe(snap *frontdoor.Snapshot, err error) (int, errorDetail) {
	var (
		header   *HeaderError
		body     *BodyTooLargeError
		tooLarge *replog.PayloadTooLargeError
		full     *replog.LogFullError
		expired  *replhub.ReplyExpiredError
		behind   *NotCaughtUpError
		proxy    *proxyError
		read     *bodyReadError
	)
	switch {
	case errors.Is(err, errNotReady):
		return http.StatusServiceUnavailable, errorDetail{Code: CodeNoReplica,
			Message: "no replica can serve this request", Reason: "the group is starting"}
	case errors.As(err, &header):
		return http.StatusBadRequest, errorDetail{Code: CodeBadRequest, Message: header.Error()}
	case errors.As(err, &read):
		return http.StatusBadRequest, errorDetail{Code: CodeBadRequest, Message: read.Error()}
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, errorDetail{Code: CodeMethod, Message: err.Error()}
	case errors.Is(err, errBadTarget):
		return http.StatusBadRequest, errorDetail{Code: CodeBadRequest, Message: err.Error()}
	case errors.As(err, &body):
		return http.StatusRequestEntityTooLarge, errorDetail{Code: protocol.CodePayloadTooLarge,
			Message: "the request is larger than the group's max_payload; it was not ordered", Reason: body.Error()}
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, errorDetail{Code: protocol.CodePayloadTooLarge,
			Message: "the request is larger than the group's max_payload; it was not ordered",
			Reason:  fmt.Sprintf("the request as a log entry is %d bytes: max_payload is %d", tooLarge.Size, tooLarge.Max)}
	case errors.As(err, &full):
		return http.StatusInsufficientStorage, errorDetail{Code: protocol.CodeLogFull,
			Message: "the group's log is full (max_log_bytes); the request was not ordered", Reason: full.Error()}
	case errors.As(err, &expired):
		return http.StatusConflict, errorDetail{Code: protocol.CodeReplyExpired,
			Message: fmt.Sprintf("the request was applied at position %d, but no live replica still has its reply", expired.Position),
			Reason:  expired.Error()}
	case errors.Is(err, replog.ErrBadSession):
		return http.StatusBadRequest, errorDetail{Code: CodeBadRequest, Message: err.Error()}
	case errors.Is(err, replhub.ErrNoReplicas):
		return http.StatusServiceUnavailable, errorDetail{Code: CodeNoReplica,
			Message: "no replica can serve this request; it was not ordered", Reason: membershipReason(snap)}
	case errors.As(err, &behind):
		return http.StatusServiceUnavailable, errorDetail{Code: CodeNoReplica,
			Message: "no replica has caught up with this session's last write", Reason: behind.Error()}
	case errors.Is(err, frontdoor.ErrNoReplica):
		return http.StatusServiceUnavailable, errorDetail{Code: CodeNoReplica,
			Message: "no replica can serve this request", Reason: membershipReason(snap)}
	case errors.Is(err, frontdoor.ErrOverloaded):
		reason := "every replica is at its in-flight limit"
		if snap != nil {
			reason = fmt.Sprintf("every active replica has %d calls in flight (max_inflight)", snap.MaxInflight)
		}
		return http.StatusServiceUnavailable, errorDetail{Code: CodeOverloaded,
			Message: "no replica can take another call now", Reason: reason}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, frontdoor.ErrCallTimeout):
		return http.StatusGatewayTimeout, errorDetail{Code: CodeGatewayTimeout,
			Message: "no reply within the group's request timeout", Reason: err.Error()}
	case errors.As(err, &proxy):
		return http.StatusBadGateway, errorDetail{Code: CodeBadGateway,
			Message: "the call to the replica failed", Reason: err.Error()}
	default:
		return http.StatusServiceUnavailable, errorDetail{Code: CodeLogUnavailable,
			Message: "the group's log failed; the request may not have been ordered", Reason: err.Error()}
	}
}

// membershipReason says how many of the group's replicas are active.
func membershipReason(snap *frontdoor.Snapshot) string {
	if snap == nil {
		return "the group is starting"
	}
	if len(snap.Members) == 0 {
		return "the group has no replicas"
	}
	return fmt.Sprintf("%d of %d replicas active", len(snap.Eligible), len(snap.Members))
}
