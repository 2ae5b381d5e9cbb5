package lean

import (
	"math"
	"strconv"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// StatusClientClosed is logged for calls whose client went away before an
// answer (nginx's 499).
const StatusClientClosed = 499

// ParseCost reads a Fulcrum-Cost value, "cpu=<work>, data=<bytes>"
// (either part optional, a bare number being the cpu part; parts separated
// by commas or semicolons), into req.Cost and req.Size. A part that is not
// a finite number ≥ 0 is ignored, as is an unknown key. It allocates
// nothing.
func ParseCost(rest string, req *strategy.Request) {
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
