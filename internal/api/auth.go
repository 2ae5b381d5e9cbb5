package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// AdminToken holds the admin token of a running admin API, which a
// config reload may change (Set). Safe for concurrent use.
type AdminToken struct {
	// sum is the SHA-256 of the token; nil when none is set. Comparing
	// sums keeps the comparison constant-time whatever the length of the
	// token offered.
	sum atomic.Pointer[[sha256.Size]byte]
}

// NewAdminToken returns a holder of token ("" = none: the admin routes
// are open).
func NewAdminToken(token string) *AdminToken {
	t := new(AdminToken)
	t.Set(token)
	return t
}

// Set replaces the token; requests that arrive afterwards need the new
// one.
func (t *AdminToken) Set(token string) {
	if token == "" {
		t.sum.Store(nil)
		return
	}
	sum := sha256.Sum256([]byte(token))
	t.sum.Store(&sum)
}

// authenticator checks the tokens of the admin API.
type authenticator struct {
	b     *balancer.Balancer
	token *AdminToken
}

func newAuthenticator(b *balancer.Balancer, token *AdminToken) authenticator {
	return authenticator{b: b, token: token}
}

// open reports whether no admin token is set: every admin route is open.
func (a authenticator) open() bool { return a.token.sum.Load() == nil }

// isAdmin reports whether token is the admin token, in constant time.
func (a authenticator) isAdmin(token string) bool {
	want := a.token.sum.Load()
	if want == nil || token == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// allowed reports whether r may call a route with access level acc.
func (a authenticator) allowed(acc access, r *http.Request) bool {
	token := bearer(r)
	switch acc {
	case public, replica:
		return true
	case groupReplica:
		return false // guardReplica checks these (replog.go)
	case stream:
		if token == "" {
			token = r.URL.Query().Get("token")
		}
	}
	if a.open() || a.isAdmin(token) {
		return true
	}
	if token == "" {
		return false
	}
	name, id := r.PathValue("name"), r.PathValue("id")
	switch acc {
	case joiner:
		return a.b.JoinAllowed(name, token)
	case self:
		return a.b.JoinMayRemove(name, id, token) || a.b.ReplicaTokenAllowed(name, id, token)
	case drainSelf:
		return a.b.ReplicaTokenAllowed(name, id, token)
	}
	return false
}

// guard wraps a route's handler with its access check.
func (s *server) guard(acc access, h func(*server, http.ResponseWriter, *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if acc == groupReplica {
			if r, ok := s.guardReplica(w, r); ok { // replog.go
				h(s, w, r)
			}
			return
		}
		if !s.auth.allowed(acc, r) {
			msg := "this endpoint needs \"Authorization: Bearer <admin token>\""
			switch acc {
			case joiner:
				msg = "registering a replica needs the admin token or a join token as \"Authorization: Bearer <token>\""
			case self:
				msg = "removing a replica needs the admin token, the join token that registered it or the replica's own token as \"Authorization: Bearer <token>\""
			case drainSelf:
				msg = "draining a replica needs the admin token or the replica's own token as \"Authorization: Bearer <token>\""
			case stream:
				msg = "the event stream needs the admin token as \"Authorization: Bearer <token>\" or ?token=<token>"
			}
			if bearer(r) != "" || r.URL.Query().Get("token") != "" {
				msg = "the token is not valid here: " + msg
			}
			writeError(w, http.StatusUnauthorized, apiError{Code: codeUnauthorized, Message: msg})
			return
		}
		h(s, w, r)
	})
}

// joinToken is the bearer token of r when it is a join token of group
// name and not the admin token: the token a replica registers with, which
// may later remove it. "" otherwise.
func (a authenticator) joinToken(r *http.Request, name string) string {
	token := bearer(r)
	if token == "" || a.isAdmin(token) || !a.b.JoinAllowed(name, token) {
		return ""
	}
	return token
}
