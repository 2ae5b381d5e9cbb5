package api

import (
	"errors"
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// bound takes another instance's notice that clients bound at its front
// door by moves this instance planned as the group's leader: POST
// /v1/cluster/bound. 409 not_leader when this instance does not lead the
// group.
func (s *server) bound(w http.ResponseWriter, r *http.Request) {
	var v protocol.BoundMoves
	if fe := decodeJSON(w, r, s.opts.MaxBodyBytes, &v); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	ans, err := s.b.TakeBound(v)
	var nl *balancer.NotLeadingError
	switch {
	case errors.As(err, &nl):
		writeError(w, http.StatusConflict, apiError{Code: codeNotLeader, Message: message(err)})
	case err != nil:
		s.fail(w, r, err)
	default:
		writeJSON(w, http.StatusOK, ans)
	}
}
