package api

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// report takes a pushed load report, authenticated by the replica's token,
// and answers the replica's advisory.
func (s *server) report(w http.ResponseWriter, r *http.Request) {
	token := bearer(r)
	if token == "" {
		writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: "a load report needs the replica's token as \"Authorization: Bearer <token>\""})
		return
	}
	data, fe := readBody(w, r, protocol.MaxReportBytes)
	if fe != nil {
		writeError(w, http.StatusBadRequest, jsonBodyError(fe))
		return
	}
	rep, err := protocol.DecodeReport(data)
	if err != nil {
		var probe protocol.Report
		if fe, ok := err.(*protocol.FieldError); ok && unmarshalStrict(data, &probe) != nil {
			writeError(w, http.StatusBadRequest, fieldError(codeInvalidJSON, fe))
			return
		}
		s.fail(w, r, err)
		return
	}
	adv, err := s.b.Report(token, rep)
	if reportRefused(w, err) { // loads.go: a cluster's 307 or 503
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, adv)
}
