package api

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// outcall serves POST /v1/groups/{name}/outcalls: one replica's copy of a
// call its server made while applying an entry (replicated callers). The
// first copy of a key is forwarded to the callee, every copy answered 200
// with the callee's reply (a callee that cannot be reached: status 502 in
// the reply). The body is bounded as a reply batch.
func (s *server) outcall(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	_, rs, err := s.b.ReplicatedHub(name)
	if err != nil {
		s.replicatedFail(w, r, err)
		return
	}
	var c protocol.Outcall
	if fe := decodeJSON(w, r, replyBatchLimit(rs), &c); fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	reply, err := s.b.Outcall(r.Context(), name, c)
	switch {
	case r.Context().Err() != nil:
		return // the agent left; the forwarding goes on for the other copies
	case err != nil:
		s.replicatedFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}
