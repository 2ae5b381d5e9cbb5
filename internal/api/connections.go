package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// DefaultConnectionsLimit is the page size of GET
// /v1/groups/{name}/connections without ?limit=.
const DefaultConnectionsLimit = 100

// connections serves GET /v1/groups/{name}/connections?limit=N&after=ID:
// a page of the group's connection table (protocol.ConnectionList), the
// connections with ids above after (default 0) in id order, at most limit
// (default DefaultConnectionsLimit, range [1, balancer.MaxConnectionsPage])
// of them. Groups of other protocols have an empty table. A parameter
// that does not parse, is out of range or is given twice is a 400 naming
// it; the parameters are checked before the group (404).
func (s *server) connections(w http.ResponseWriter, r *http.Request) {
	limit, after, e := connectionsQuery(r)
	if e != nil {
		writeError(w, http.StatusBadRequest, *e)
		return
	}
	list, err := s.b.Connections(r.PathValue("name"), after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// connectionsQuery reads ?limit= and ?after= of a connection table
// request, or returns the 400 of the first one that is wrong.
func connectionsQuery(r *http.Request) (limit int, after uint64, e *apiError) {
	q := r.URL.Query()
	if limit, e = queryLimit(q, DefaultConnectionsLimit, balancer.MaxConnectionsPage); e != nil {
		return 0, 0, e
	}
	if v, ok := q["after"]; ok {
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil || len(v) > 1 {
			return 0, 0, queryError("after", v[0], "a connection id: a decimal integer in [0, 18446744073709551615], given once (default 0, the first page); a page's next")
		}
		after = n
	}
	return limit, after, nil
}

// queryLimit reads a page's ?limit=: def when absent, else an integer in
// [1, most] given once, or the 400 naming it.
func queryLimit(q url.Values, def, most int) (int, *apiError) {
	v, ok := q["limit"]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 || n > most || len(v) > 1 {
		return 0, queryError("limit", v[0], fmt.Sprintf("an integer in [1, %d], given once (default %d)", most, def))
	}
	return n, nil
}

// queryError is the 400 of query parameter field with value v.
func queryError(field, v, allowed string) *apiError {
	e := fieldError(codeInvalidValue, &protocol.FieldError{Field: field, Value: v, Allowed: "must be " + allowed})
	return &e
}
