package httpdoor

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// viaName is the name this balancer process gives itself in the Via
// fields of the requests its front doors proxy (RFC 9110 §7.6.3's
// received-by): "fulcrum-" and 12 random hex digits, the same for every
// front door of the process and different for every process. A request
// that already carries it came back around — a replica address pointing
// at a front door of this balancer — and is answered 508 Loop Detected
// instead of being forwarded again.
var viaName = newViaName()

func newViaName() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "fulcrum-" + hex.EncodeToString(b[:])
}

// looped reports whether r already passed through this balancer.
func looped(r *http.Request) bool {
	for _, v := range r.Header["Via"] {
		if lean.ViaHas(v, viaName) {
			return true
		}
	}
	return false
}

// viaOf is the Via entry this balancer adds to r when forwarding it: the
// protocol r came in ("1.1", "2") and viaName.
func viaOf(r *http.Request) string {
	proto := strconv.Itoa(r.ProtoMajor)
	if r.ProtoMajor < 2 {
		proto += "." + strconv.Itoa(r.ProtoMinor)
	}
	return proto + " " + viaName
}
