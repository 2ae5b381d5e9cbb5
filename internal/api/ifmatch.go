package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A group's ETag is its revision as a strong entity tag: the decimal
// revision in double quotes ("42"). Writes of the group take If-Match: one
// such tag, or "*" (any existing group).

// etag is the ETag of revision rev.
func etag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// setETag sets the ETag header of a group at revision rev (none when 0).
func setETag(w http.ResponseWriter, rev int64) {
	if rev != 0 {
		w.Header().Set("ETag", etag(rev))
	}
}

// allowedIfMatch says what If-Match accepts.
const allowedIfMatch = `"*" or one strong ETag of the group, its revision in double quotes ("42"), as GET /v1/groups/{name} returns it`

// parseIfMatch reads r's If-Match header: the zero Match when absent.
func parseIfMatch(r *http.Request) (balancer.Match, *protocol.FieldError) {
	vs := r.Header.Values("If-Match")
	if len(vs) == 0 {
		return balancer.Match{}, nil
	}
	v := strings.TrimSpace(strings.Join(vs, ","))
	if v == "*" {
		return balancer.Match{Any: true}, nil
	}
	fe := &protocol.FieldError{Field: "If-Match", Value: v, Allowed: allowedIfMatch}
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return balancer.Match{}, fe
	}
	digits := v[1 : len(v)-1]
	rev, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || rev <= 0 || digits[0] == '+' {
		return balancer.Match{}, fe
	}
	return balancer.Match{Rev: rev}, nil
}

// revisionMismatch writes the 412 of a *balancer.RevisionError, if err is
// one, with the current revision in the body and the ETag header; or the
// 412 group_exists of a PUT with If-None-Match: * on an existing group.
func revisionMismatch(w http.ResponseWriter, err error) bool {
	var re *balancer.RevisionError
	if !errors.As(err, &re) {
		return false
	}
	if re.Match.None && re.Current != 0 {
		writeError(w, http.StatusPreconditionFailed, apiError{Code: codeGroupExists, Message: message(err), Field: "name"})
		return true
	}
	setETag(w, re.Current)
	cur := re.Current
	writeError(w, http.StatusPreconditionFailed, apiError{
		Code: codeRevisionMismatch, Message: message(err), Field: "If-Match", Revision: &cur,
	})
	return true
}
