package api

import (
	"errors"
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// groupList is the body of GET /v1/groups.
type groupList struct {
	Groups []protocol.GroupStatus `json:"groups"`
}

func (s *server) listGroups(w http.ResponseWriter, _ *http.Request) {
	gs := s.b.Groups()
	if gs == nil {
		gs = []protocol.GroupStatus{}
	}
	writeJSON(w, http.StatusOK, groupList{Groups: gs})
}

func (s *server) getGroup(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.Group(r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setETag(w, st.Revision)
	writeJSON(w, http.StatusOK, st)
}

// putGroup creates (201) or replaces (200) a group. The body is the group's
// config file keys as JSON; "name", when given, must match the path. With
// "If-None-Match: *" an existing group is not replaced (412); with
// If-Match the group is replaced only at that revision (ifmatch.go).
func (s *server) putGroup(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	m, fe := parseIfMatch(r)
	if fe != nil {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, fe))
		return
	}
	var gs protocol.Group
	data, fe := readBody(w, r, s.opts.MaxBodyBytes)
	if fe == nil {
		fe = unmarshalStrict(data, &gs)
	}
	if fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	if fe := zeroReplicaWeight(data); fe != nil {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, fe))
		return
	}
	if gs.Name != "" && gs.Name != name {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, &protocol.FieldError{
			Field: "name", Value: gs.Name, Allowed: "must be omitted or equal the name in the path (" + name + ")",
		}))
		return
	}
	gs.Name = name
	if r.Header.Get("If-None-Match") == "*" {
		// Looked at here so that an existing group is a 412 whatever the
		// body; held atomically by the store's transaction (ifmatch.go).
		m.None = true
		if _, err := s.b.Group(name); err == nil {
			writeError(w, http.StatusPreconditionFailed, apiError{Code: codeGroupExists, Message: "group " + name + " already exists (If-None-Match: *)", Field: "name"})
			return
		} else if !errors.Is(err, balancer.ErrUnknownGroup) {
			s.fail(w, r, err)
			return
		}
	}
	st, created, err := s.b.PutGroupIf(gs, m)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setETag(w, st.Revision)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/groups/"+name)
	}
	writeJSON(w, status, st)
}

// patchGroup changes strategy, params, binding, max_inflight or queue at
// run time.
func (s *server) patchGroup(w http.ResponseWriter, r *http.Request) {
	m, fe := parseIfMatch(r)
	if fe != nil {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, fe))
		return
	}
	var p protocol.GroupPatch
	if fe := decodeJSON(w, r, s.opts.MaxBodyBytes, &p); fe != nil {
		if fe.Allowed == allowedUnknownField {
			fe.Allowed = "is not a field PATCH changes: only strategy, params, binding, max_inflight and queue (PUT replaces the whole group)"
		}
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	st, err := s.b.PatchGroupIf(r.PathValue("name"), p, m)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setETag(w, st.Revision)
	writeJSON(w, http.StatusOK, st)
}

// deleteGroup stops a group's front door and forgets it and its replicas.
func (s *server) deleteGroup(w http.ResponseWriter, r *http.Request) {
	m, fe := parseIfMatch(r)
	if fe != nil {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, fe))
		return
	}
	if err := s.b.DeleteGroupIf(r.PathValue("name"), m); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
