package api

import (
	"net/http"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// blockState is the answer of the block routes.
type blockState struct {
	Group   string `json:"group"`
	Address string `json:"address"`
	// Blocked says whether the address is blocked after the call.
	Blocked bool `json:"blocked"`
}

// blockBody is POST /v1/groups/{name}/blocks's body.
type blockBody struct {
	Address string `json:"address"`
}

// block makes a group refuse to register an address: 201, or 200 when it
// was blocked already.
func (s *server) block(w http.ResponseWriter, r *http.Request) {
	var body blockBody
	data, fe := readBody(w, r, s.opts.MaxBodyBytes)
	if fe == nil {
		fe = unmarshalStrict(data, &body)
	}
	if fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	name := r.PathValue("name")
	created, err := s.b.Block(name, body.Address)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, blockState{Group: name, Address: body.Address, Blocked: true})
}

// unblock lifts the block of ?address=: 200, or 404 when it is not blocked.
func (s *server) unblock(w http.ResponseWriter, r *http.Request) {
	name, addr := r.PathValue("name"), r.URL.Query().Get("address")
	if addr == "" {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{Field: "address", Value: addr,
			Allowed: "the query parameter ?address= must name the blocked address (URL-encoded)"}))
		return
	}
	if err := s.b.Unblock(name, addr); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, blockState{Group: name, Address: addr, Blocked: false})
}

// wantsBlock reads ?block= of a replica removal; only the admin may block.
// It writes the error and returns ok false when the request cannot go on.
func (s *server) wantsBlock(w http.ResponseWriter, r *http.Request) (block, ok bool) {
	v := r.URL.Query().Get("block")
	if v == "" {
		return false, true
	}
	block, err := strconv.ParseBool(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{Field: "block", Value: v, Allowed: "must be true or false"}))
		return false, false
	}
	if block && !s.auth.open() && !s.auth.isAdmin(bearer(r)) {
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: "block=true needs the admin token as \"Authorization: Bearer <token>\""})
		return false, false
	}
	return block, true
}
