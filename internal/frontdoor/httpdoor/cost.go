package httpdoor

import (
	"math"
	"net/http"
	"strconv"
	"strings"

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
		costFacts(v[0], req)
	}
}

// costFacts reads a Fulcrum-Cost value into req.
func costFacts(rest string, req *strategy.Request) {
	for rest != "" {
		var part string
		if i := strings.IndexAny(rest, ",;"); i >= 0 {
			part, rest = rest[:i], rest[i+1:]
		} else {
			part, rest = rest, ""
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			key, val = "cpu", part
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 1) {
			continue
		}
		switch key = strings.TrimSpace(key); {
		case strings.EqualFold(key, "cpu"):
			req.Cost = x
		case strings.EqualFold(key, "data"):
			req.Size = x
		}
	}
}
