package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// DefaultSessionsLimit is the page size of GET
// /v1/groups/{name}/sessions without ?limit=.
const DefaultSessionsLimit = 100

// sessions serves GET /v1/groups/{name}/sessions?limit=N&after=TOKEN: a
// page of the group's session table (protocol.SessionList), the
// client-activated entries this instance holds after the token after
// (a page's next, "<rule>/<key>"; default the first page), ordered by
// rule then key, at most limit (default DefaultSessionsLimit, range
// [1, balancer.MaxSessionsPage]) of them. A group without affinity rules
// has an empty table. A parameter that does not parse, is out of range or
// is given twice is a 400 naming it; the parameters are checked before
// the group (404).
func (s *server) sessions(w http.ResponseWriter, r *http.Request) {
	limit, after, e := sessionsQuery(r)
	if e != nil {
		writeError(w, http.StatusBadRequest, *e)
		return
	}
	list, err := s.b.Sessions(r.PathValue("name"), after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// sessionsQuery reads ?limit= and ?after= of a session table request, or
// returns the 400 of the first one that is wrong.
func sessionsQuery(r *http.Request) (limit int, after string, e *apiError) {
	q := r.URL.Query()
	if limit, e = queryLimit(q, DefaultSessionsLimit, balancer.MaxSessionsPage); e != nil {
		return 0, "", e
	}
	if v, ok := q["after"]; ok {
		rule, _, found := strings.Cut(v[0], "/")
		n, err := strconv.Atoi(rule)
		if !found || err != nil || n < 0 || len(v) > 1 {
			return 0, "", queryError("after", v[0], "a page's next token, <rule>/<key> with rule a non-negative integer (URL-encoded), given once (default: the first page)")
		}
		after = v[0]
	}
	return limit, after, nil
}
