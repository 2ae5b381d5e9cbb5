package httpdoor

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// requestFacts fills what cost-aware strategies (ett) read of a request:
// its path and the Fulcrum-Cost header, "cpu=<work>, data=<bytes>" (either
// part optional, a bare number being the cpu part; parts separated by
// commas or semicolons). A part that is not a finite number ≥ 0 is
// ignored, as is an unknown key. Well-formed headers cost no allocation.
func requestFacts(r *http.Request, req *strategy.Request) {
	req.Path = r.URL.Path
	if v := r.Header[protocol.HeaderCost]; len(v) > 0 {
		lean.ParseCost(v[0], req)
	}
}
