package api

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// replicaState is the answer of the drain, activate and remove routes.
type replicaState struct {
	Group string `json:"group"`
	ID    string `json:"id"`
	// State is the replica's state after the call.
	State string `json:"state"`
	// Blocked is the address a removal with ?block=true blocked.
	Blocked string `json:"blocked,omitempty"`
}

// register adds a replica: 201 with its id and token, or 200 when
// "replace" took over an existing registration of the same address.
func (s *server) register(w http.ResponseWriter, r *http.Request) {
	var reg protocol.Registration
	data, fe := readBody(w, r, s.opts.MaxBodyBytes)
	if fe == nil {
		fe = unmarshalStrict(data, &reg)
	}
	if fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	if fe := zeroWeight(data); fe != nil {
		writeError(w, http.StatusBadRequest, fieldError(codeInvalidValue, fe))
		return
	}
	name := r.PathValue("name")
	out, created, err := s.b.RegisterWithJoinToken(name, reg, s.auth.joinToken(r, name))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/groups/"+name+"/replicas/"+out.ID)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, out)
}

// drain stops new bindings to a replica; its clients are sent back.
func (s *server) drain(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("name"), r.PathValue("id")
	if err := s.b.Drain(name, id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, replicaState{Group: name, ID: id, State: protocol.StateDraining})
}

// activate undoes a drain.
func (s *server) activate(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("name"), r.PathValue("id")
	if err := s.b.Activate(name, id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, replicaState{Group: name, ID: id, State: s.replicaStateOf(name, id, protocol.StateActive)})
}

// removeReplica drains a replica and removes it once idle: 202. With
// ?block=true (admin only) its address is blocked first, so its monitor
// cannot register it again.
func (s *server) removeReplica(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("name"), r.PathValue("id")
	block, ok := s.wantsBlock(w, r)
	if !ok {
		return
	}
	var (
		blocked string
		err     error
	)
	if block {
		blocked, err = s.b.RemoveReplicaBlocking(name, id)
	} else {
		err = s.b.RemoveReplica(name, id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, replicaState{Group: name, ID: id, State: protocol.StateDraining, Blocked: blocked})
}

// replicaStateOf reads a replica's current state (an activated replica may
// still be down or ejected by health checks), or def.
func (s *server) replicaStateOf(group, id, def string) string {
	st, err := s.b.Group(group)
	if err != nil {
		return def
	}
	for _, rs := range st.Replicas {
		if rs.ID == id {
			return rs.State
		}
	}
	return def
}
