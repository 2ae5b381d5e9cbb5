package lean

import "strings"

// ViaHas reports whether the Via field value v (RFC 9110 §7.6.3: a comma-
// separated list of "received-protocol received-by [comment]") names
// received-by by: whether the request already passed through the proxy
// called by. It allocates nothing.
func ViaHas(v, by string) bool {
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimLeft(entry, " \t")
		i := strings.IndexAny(entry, " \t")
		if i < 0 {
			continue // no received-by
		}
		received := strings.TrimLeft(entry[i:], " \t")
		if j := strings.IndexAny(received, " \t"); j >= 0 {
			received = received[:j]
		}
		if received == by {
			return true
		}
	}
	return false
}
