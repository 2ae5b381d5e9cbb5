package lean

import "strings"

// ViaHas reports whether the Via field value v (RFC 9110 §7.6.3: a comma-
// separated list of "received-protocol received-by [comment]") names
// received-by by: whether the request already passed through the proxy
// called by.
func ViaHas(v, by string) bool {
	for entry := range strings.SplitSeq(v, ",") {
		f := strings.Fields(entry)
		if len(f) >= 2 && f[1] == by {
			return true
		}
	}
	return false
}
