package registry

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults and bounds of a replicated group's settings (Group.Replicated;
// binding replicated only).
const (
	// DefaultReplicatedMaxPayload is replicated.max_payload's default.
	DefaultReplicatedMaxPayload = protocol.ByteSize(1 << 20)
	// DefaultReplicatedMaxLogBytes is replicated.max_log_bytes's default.
	DefaultReplicatedMaxLogBytes = protocol.ByteSize(256 << 20)
	// DefaultReplicatedSessionTTL is replicated.session_ttl's default.
	DefaultReplicatedSessionTTL = protocol.Duration(10 * time.Minute)
	// MinReplicatedSessionTTL and MaxReplicatedSessionTTL bound
	// replicated.session_ttl: an etcd lease's TTL in cluster mode, whole
	// seconds of at least 2 s.
	MinReplicatedSessionTTL = 2 * time.Second
	MaxReplicatedSessionTTL = 7 * 24 * time.Hour
	// MaxReplicatedMaxPayload and MaxReplicatedMaxLogBytes bound
	// replicated.max_payload (a request is held in memory) and
	// replicated.max_log_bytes.
	MaxReplicatedMaxPayload  = protocol.ByteSize(1 << 30)
	MaxReplicatedMaxLogBytes = protocol.ByteSize(1 << 40)
	// MaxReadOnlyPatterns bounds replicated.read_only.
	MaxReadOnlyPatterns = 256
	// maxReadOnlyPatternLen bounds one read_only pattern, in bytes.
	maxReadOnlyPatternLen = 1024
)

// IsReplicated reports whether g is a replicated group (binding
// replicated).
func IsReplicated(g protocol.Group) bool { return g.Binding == protocol.BindingReplicated }

// replicatedWithDefaults fills the defaults of g.Replicated for a
// replicated group; other groups' blocks are left as they are (validation
// refuses a set one).
func replicatedWithDefaults(g *protocol.Group) {
	if !IsReplicated(*g) {
		return
	}
	r := &g.Replicated
	if r.MaxPayload == 0 {
		r.MaxPayload = DefaultReplicatedMaxPayload
	}
	if r.MaxLogBytes == 0 {
		r.MaxLogBytes = DefaultReplicatedMaxLogBytes
	}
	if r.SessionTTL == 0 {
		r.SessionTTL = DefaultReplicatedSessionTTL
	}
}

// validateReplicated checks g.Replicated after WithDefaults; every
// problem, each a *protocol.FieldError.
func validateReplicated(g protocol.Group) []error {
	r := g.Replicated
	var errs []error
	fe := func(field string, v any, allowed string) {
		errs = append(errs, &protocol.FieldError{Field: "replicated" + field, Value: v, Allowed: allowed})
	}
	if !IsReplicated(g) {
		if r.MaxPayload != 0 || r.MaxLogBytes != 0 || r.SessionTTL != 0 || r.ReadOnly != nil {
			fe("", "(a mapping)", "is only allowed with binding replicated (the group's binding is "+g.Binding+")")
		}
		return errs
	}
	payloadOK := r.MaxPayload >= 1 && r.MaxPayload <= MaxReplicatedMaxPayload
	if !payloadOK {
		fe(".max_payload", r.MaxPayload, fmt.Sprintf("must be a size in [1, %s] bytes", MaxReplicatedMaxPayload))
	}
	switch {
	case r.MaxLogBytes < 1 || r.MaxLogBytes > MaxReplicatedMaxLogBytes:
		fe(".max_log_bytes", r.MaxLogBytes, fmt.Sprintf("must be a size in [1, %s] bytes, at least replicated.max_payload", MaxReplicatedMaxLogBytes))
	case payloadOK && r.MaxLogBytes < r.MaxPayload:
		fe(".max_log_bytes", r.MaxLogBytes, fmt.Sprintf("must be at least replicated.max_payload (%s)", r.MaxPayload))
	}
	if d := r.SessionTTL.D(); d < MinReplicatedSessionTTL || d > MaxReplicatedSessionTTL || d%time.Second != 0 {
		fe(".session_ttl", r.SessionTTL.String(), fmt.Sprintf("must be whole seconds in [%s, %s] (an etcd lease's TTL in cluster mode)", MinReplicatedSessionTTL, MaxReplicatedSessionTTL))
	}
	if len(r.ReadOnly) > MaxReadOnlyPatterns {
		fe(".read_only", fmt.Sprintf("(%d patterns)", len(r.ReadOnly)), fmt.Sprintf("must hold at most %d patterns", MaxReadOnlyPatterns))
		return errs
	}
	for i, p := range r.ReadOnly {
		field := fmt.Sprintf(".read_only[%d]", i)
		if allowed := checkReadOnlyPattern(p); allowed != "" {
			fe(field, p, allowed)
			continue
		}
		if j := slices.Index(r.ReadOnly[:i], p); j >= 0 {
			fe(field, p, fmt.Sprintf("must be unique (also read_only[%d])", j))
			continue
		}
		for j, q := range r.ReadOnly[:i] {
			if checkReadOnlyPattern(q) == "" && conflicts(q, p) {
				fe(field, p, fmt.Sprintf("must not conflict with read_only[%d] %q: both match some requests and neither is more specific (net/http ServeMux rules)", j, q))
				break
			}
		}
	}
	return errs
}

// readOnlyAllowed says what a read_only entry must be.
const readOnlyAllowed = `must be a ServeMux pattern "METHOD /path" such as "GET /value" or "GET /balance/{rest...}"`

// checkReadOnlyPattern checks one read_only entry: a method, one space and
// a path, which net/http's ServeMux accepts as a pattern. It returns what
// is allowed, or "" when p is fine. It never panics.
func checkReadOnlyPattern(p string) string {
	if len(p) > maxReadOnlyPatternLen {
		return fmt.Sprintf("%s, at most %d bytes", readOnlyAllowed, maxReadOnlyPatternLen)
	}
	method, path, ok := strings.Cut(p, " ")
	if !ok || method == "" {
		return readOnlyAllowed + " (a method is required)"
	}
	if !isToken(method) {
		return readOnlyAllowed + fmt.Sprintf(" (method %q is not an HTTP method token)", method)
	}
	if !strings.HasPrefix(path, "/") {
		return readOnlyAllowed + " (the path must start with '/', no host)"
	}
	if err := register(http.NewServeMux(), p); err != nil {
		return readOnlyAllowed + " (" + err.Error() + ")"
	}
	return ""
}

// conflicts reports whether patterns a and b (each valid) cannot be
// registered together on one ServeMux.
func conflicts(a, b string) bool {
	mux := http.NewServeMux()
	return register(mux, a) != nil || register(mux, b) != nil
}

// register registers pattern on mux, turning ServeMux's panic on a bad or
// conflicting pattern into an error.
func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			// "parsing "GET /{": at offset 5: bad wildcard segment": keep
			// what follows the pattern.
			if _, rest, ok := strings.Cut(msg, "\": "); ok && strings.HasPrefix(msg, "parsing ") {
				msg = rest
			}
			err = fmt.Errorf("%s", msg)
		}
	}()
	mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110), as a method is.
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}
