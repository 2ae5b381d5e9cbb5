package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Error codes of the "code" member, each with its status.
const (
	codeInvalidJSON      = "invalid_json"           // 400: malformed, oversized, unknown field, wrong type
	codeInvalidValue     = "invalid_value"          // 400: a value outside what is allowed
	codeUnauthorized     = "unauthorized"           // 401: missing or wrong bearer token
	codeUnknownGroup     = "unknown_group"          // 404
	codeUnknownReplica   = "unknown_replica"        // 404
	codeUnknownBlock     = "unknown_block"          // 404: the address is not blocked
	codeAddressBlocked   = "address_blocked"        // 403: registration of a blocked address
	codeNotFound         = "not_found"              // 404: no such endpoint
	codeMethodNotAllowed = "method_not_allowed"     // 405
	codeDuplicateAddress = "duplicate_address"      // 409
	codeWorkerConflict   = "worker_conflict"        // 409: a registration's worker does not match the replica's
	codeFrontDoor        = "front_door_unavailable" // 409
	codeNoConfigFile     = "no_config_file"         // 409: POST /v1/reload without --config
	codeInvalidConfig    = "invalid_config"         // 400: POST /v1/reload of a file that cannot be used
	codeGroupExists      = "group_exists"           // 412: PUT with If-None-Match: *
	codeRevisionMismatch = "revision_mismatch"      // 412: If-Match no longer holds (ifmatch.go)
	codeNotReady         = "not_ready"              // 503
	codeShuttingDown     = "shutting_down"          // 503
	codeInternal         = "internal"               // 500
)

// apiError is the "error" member of every error body.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the offending request field, as in the request
	// ("params.dampening", "health.interval", "body").
	Field string `json:"field,omitempty"`
	// Allowed says what the field accepts.
	Allowed string `json:"allowed,omitempty"`
	// ExistingID is the replica already registered at the address (409).
	ExistingID string `json:"existing_id,omitempty"`
	// Errors are every problem of a config file that a reload refused
	// (invalid_config), one line each, in line order.
	Errors []string `json:"errors,omitempty"`
	// Revision is the group's current revision (revision_mismatch; 0:
	// the group does not exist).
	Revision *int64 `json:"revision,omitempty"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errorBody{apiError{Code: codeInternal, Message: "cannot encode the answer: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// writeError writes an error body with status.
func writeError(w http.ResponseWriter, status int, e apiError) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fulcrum"`)
	}
	writeJSON(w, status, errorBody{e})
}

// fieldError is a 400 naming a field.
func fieldError(code string, fe *protocol.FieldError) apiError {
	return apiError{Code: code, Message: fe.Error(), Field: fe.Field, Allowed: fe.Allowed}
}

// jsonBodyError is a 400 for a request body that does not decode (an
// error of decodeJSON): "<field>: <what is allowed>[, got <what it was>]".
func jsonBodyError(fe *protocol.FieldError) apiError {
	msg := fe.Field + ": " + fe.Allowed
	if v, ok := fe.Value.(string); ok && v != "" {
		msg += ", got " + v
	}
	return apiError{Code: codeInvalidJSON, Message: msg, Field: fe.Field, Allowed: fe.Allowed}
}

// fail maps an error from the balancer to its status and writes it.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if revisionMismatch(w, err) || storeUnavailable(w, err) {
		return
	}
	var (
		fe  *protocol.FieldError
		pe  *strategy.ParamError
		dup *balancer.DuplicateAddressError
		wc  *balancer.WorkerConflictError
		le  *balancer.LoopError
		be  *balancer.BlockedError
	)
	switch {
	case errors.As(err, &le):
		writeError(w, http.StatusBadRequest, apiError{Code: codeInvalidValue, Message: message(err), Field: le.Field, Allowed: le.Allowed()})
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, fe))
	case errors.As(err, &pe):
		writeError(w, http.StatusBadRequest, apiError{Code: codeInvalidValue, Message: pe.Error(), Field: "params." + pe.Field, Allowed: pe.Allowed})
	case errors.Is(err, strategy.ErrUnknown):
		writeError(w, http.StatusBadRequest, apiError{Code: codeInvalidValue, Message: message(err), Field: "strategy", Allowed: "one of: " + strings.Join(strategy.Names(), ", ")})
	case errors.As(err, &dup):
		writeError(w, http.StatusConflict, apiError{Code: codeDuplicateAddress, Message: message(err), Field: "address", ExistingID: dup.ExistingID})
	case errors.As(err, &wc):
		writeError(w, http.StatusConflict, apiError{Code: codeWorkerConflict, Message: message(err), Field: wc.Field, ExistingID: wc.ExistingID})
	case errors.Is(err, balancer.ErrUnknownGroup):
		writeError(w, http.StatusNotFound, apiError{Code: codeUnknownGroup, Message: message(err)})
	case errors.As(err, &be):
		writeError(w, http.StatusForbidden, apiError{Code: codeAddressBlocked, Message: message(err), Field: "address"})
	case errors.Is(err, balancer.ErrUnknownBlock):
		writeError(w, http.StatusNotFound, apiError{Code: codeUnknownBlock, Message: message(err)})
	case errors.Is(err, balancer.ErrUnknownReplica):
		writeError(w, http.StatusNotFound, apiError{Code: codeUnknownReplica, Message: message(err)})
	case errors.Is(err, balancer.ErrNotRegistrar):
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: message(err)})
	case errors.Is(err, balancer.ErrUnknownToken):
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: "the bearer token is not a registered replica's token"})
	case errors.Is(err, balancer.ErrFrontDoor):
		writeError(w, http.StatusConflict, apiError{Code: codeFrontDoor, Message: message(err), Field: "front_door"})
	case errors.Is(err, balancer.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, apiError{Code: codeShuttingDown, Message: message(err)})
	default:
		s.log.Error("admin API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, apiError{Code: codeInternal, Message: err.Error()})
	}
}

// message is an error's text without the package prefix of sentinels.
func message(err error) string {
	return strings.TrimPrefix(err.Error(), "balancer: ")
}
