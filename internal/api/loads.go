package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Codes of the cluster's reports and load pushes.
const (
	codeNoLeader  = "no_leader"  // 503: a report while the group has no leader to send it to
	codeNotLeader = "not_leader" // 307: a report at an instance that does not lead the group; 409: a bound notice there
)

// noLeaderRetry is the Retry-After of a no_leader answer, in seconds.
const noLeaderRetry = 1

// loads takes a group's load view pushed by its analyzer leader (another
// instance of the cluster): POST /v1/cluster/loads.
func (s *server) loads(w http.ResponseWriter, r *http.Request) {
	var v protocol.LoadView
	if fe := decodeJSON(w, r, s.opts.MaxBodyBytes, &v); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	ans, err := s.b.TakeLoads(v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// reportRefused answers a report the balancer refused because this
// instance does not lead the replica's group: 307 to the leader's
// /v1/report, or 503 no_leader with Retry-After. It tells whether err was
// such a refusal.
func reportRefused(w http.ResponseWriter, err error) bool {
	var nl *balancer.NotLeaderError
	switch {
	case errors.As(err, &nl):
		w.Header().Set("Location", nl.URL)
		writeError(w, http.StatusTemporaryRedirect, apiError{Code: codeNotLeader, Message: message(err)})
		return true
	case errors.Is(err, balancer.ErrNoLeader):
		w.Header().Set("Retry-After", strconv.Itoa(noLeaderRetry))
		writeError(w, http.StatusServiceUnavailable, apiError{Code: codeNoLeader, Message: message(err)})
		return true
	}
	return false
}
