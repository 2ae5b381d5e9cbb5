// Package rules compiles a group's affinity rules (protocol.AffinityRule)
// and matches HTTP calls to them with http.ServeMux's precedence. It is
// package affinity's (which re-exports Compile) and registry's shared
// part: it imports no front door, so that validation can use it.
package rules

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults and ranges of a rule's settings (protocol.AffinityRule).
const (
	DefaultTimeout    = 5 * time.Minute
	MinTimeout        = time.Second
	MaxTimeout        = 24 * time.Hour
	DefaultMaxEntries = 100_000
	MaxMaxEntries     = 10_000_000
)

// Rule is one compiled affinity rule.
type Rule struct {
	// Index is the rule's position in the group's affinity list.
	Index int
	// Kind is protocol.AffinitySingleCall, AffinitySingleton or
	// AffinityClientActivated.
	Kind string
	// Match is the ServeMux pattern (http; "" in a tcp group).
	Match string
	// Key is the wildcard whose value names the object ("" when the
	// pattern has none: every call the rule matches shares one key).
	Key string
	// Cookie names the object by a cookie the replica sets
	// (client-activated, http; "" otherwise).
	Cookie string
	// Timeout is the idle time after which a client-activated entry
	// expires (default applied).
	Timeout time.Duration
	// MaxEntries bounds the rule's entries (default applied).
	MaxEntries int
}

// Proto is the protocol the rules were compiled for.
func (r *Rules) Proto() string {
	if r == nil {
		return ""
	}
	return r.proto
}

// Cookies reports whether some rule names a cookie.
func (r *Rules) Cookies() bool { return r != nil && r.cookies }

// Rules are a group's compiled affinity rules. Immutable; safe for
// concurrent use.
type Rules struct {
	proto string
	list  []Rule
	// mux matches HTTP calls to rules (nil in a tcp group or when there
	// are no rules): each rule's pattern is registered with a handler
	// that records the rule and its key (match.go).
	mux *http.ServeMux
	// cookies: some rule names a cookie.
	cookies bool
}

// Len is the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.list)
}

// Rule returns rule i.
func (r *Rules) Rule(i int) Rule { return r.list[i] }

// Equal reports whether r and o were compiled from the same rules (a
// table is kept across snapshots while its rules stay equal).
func (r *Rules) Equal(o *Rules) bool {
	if r.Len() != o.Len() {
		return false
	}
	if r.Len() == 0 {
		return true
	}
	if r.proto != o.proto {
		return false
	}
	for i := range r.list {
		if r.list[i] != o.list[i] {
			return false
		}
	}
	return true
}

var kinds = protocol.AffinitySingleCall + ", " + protocol.AffinitySingleton + " or " + protocol.AffinityClientActivated

// Compile checks a group's affinity rules for protocol proto (http or
// tcp) and compiles them. Errors are *protocol.FieldError naming the
// rule's field ("affinity[1].match"), the value and what is allowed. An
// empty list compiles to nil Rules (no affinity).
//
// http: Match is required, an http.ServeMux pattern; two rules whose
// patterns are equal, or that ServeMux reports as conflicting (neither
// more specific), are an error naming both. Key must be one of the
// pattern's wildcards (default: its first). Cookie only with
// client-activated. tcp: at most one rule, without match, key or cookie.
func Compile(proto string, rules []protocol.AffinityRule) (*Rules, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	out := &Rules{proto: proto, list: make([]Rule, len(rules))}
	switch proto {
	case protocol.ProtocolHTTP:
		out.mux = http.NewServeMux()
	case protocol.ProtocolTCP:
		if len(rules) > 1 {
			return nil, &protocol.FieldError{Field: "affinity", Value: len(rules), Allowed: "a tcp group takes at most one rule, which covers every connection"}
		}
	default:
		return nil, &protocol.FieldError{Field: "affinity", Value: proto, Allowed: "affinity rules apply to tcp and http groups only"}
	}
	for i, ar := range rules {
		at := fmt.Sprintf("affinity[%d]", i)
		r := Rule{Index: i, Kind: ar.Kind, Match: ar.Match, Key: ar.Key, Cookie: ar.Cookie, Timeout: ar.Timeout.D(), MaxEntries: ar.MaxEntries}
		switch r.Kind {
		case protocol.AffinitySingleCall, protocol.AffinitySingleton, protocol.AffinityClientActivated:
		case "":
			return nil, &protocol.FieldError{Field: at + ".kind", Value: nil, Allowed: "is required: " + kinds}
		default:
			return nil, &protocol.FieldError{Field: at + ".kind", Value: r.Kind, Allowed: "must be " + kinds}
		}
		if r.Timeout == 0 {
			r.Timeout = DefaultTimeout
		} else if r.Timeout < MinTimeout || r.Timeout > MaxTimeout {
			return nil, &protocol.FieldError{Field: at + ".timeout", Value: ar.Timeout.String(), Allowed: "must be in [1s, 24h]"}
		}
		if r.MaxEntries == 0 {
			r.MaxEntries = DefaultMaxEntries
		} else if r.MaxEntries < 1 || r.MaxEntries > MaxMaxEntries {
			return nil, &protocol.FieldError{Field: at + ".max_entries", Value: r.MaxEntries, Allowed: fmt.Sprintf("must be in [1, %d]", MaxMaxEntries)}
		}
		if r.Cookie != "" && r.Kind != protocol.AffinityClientActivated {
			return nil, &protocol.FieldError{Field: at + ".cookie", Value: r.Cookie, Allowed: "applies to client-activated rules only"}
		}
		if proto == protocol.ProtocolTCP {
			for _, f := range []struct{ name, v string }{{"match", r.Match}, {"key", r.Key}, {"cookie", r.Cookie}} {
				if f.v != "" {
					return nil, &protocol.FieldError{Field: at + "." + f.name, Value: f.v, Allowed: "must be empty in a tcp group: its rule covers every connection"}
				}
			}
			out.list[i] = r
			continue
		}
		if r.Cookie != "" && !validCookieName(r.Cookie) {
			return nil, &protocol.FieldError{Field: at + ".cookie", Value: r.Cookie, Allowed: "must be a cookie name (an HTTP token)"}
		}
		if r.Match == "" {
			return nil, &protocol.FieldError{Field: at + ".match", Value: nil, Allowed: "is required in an http group: a ServeMux pattern such as /objects/{name}/{rest...}"}
		}
		if err := register(out.mux, r.Match, i); err != nil {
			if j := conflicting(rules[:i], r.Match); j >= 0 {
				return nil, &protocol.FieldError{Field: at + ".match", Value: r.Match,
					Allowed: fmt.Sprintf("overlaps affinity[%d].match %q: the two patterns are equal or neither is more specific (ServeMux); give them an order", j, rules[j].Match)}
			}
			return nil, &protocol.FieldError{Field: at + ".match", Value: r.Match, Allowed: "must be an http.ServeMux pattern ([METHOD ][HOST]/PATH): " + err.Error()}
		}
		wild := wildcards(r.Match)
		switch {
		case r.Key == "" && len(wild) > 0:
			r.Key = wild[0]
		case r.Key != "" && !contains(wild, r.Key):
			allowed := "the pattern has no wildcards"
			if len(wild) > 0 {
				allowed = "one of the pattern's wildcards: " + strings.Join(wild, ", ")
			}
			return nil, &protocol.FieldError{Field: at + ".key", Value: r.Key, Allowed: "must name a wildcard of match, " + allowed}
		}
		if r.Kind == protocol.AffinityClientActivated && r.Cookie == "" && len(wild) == 0 {
			return nil, &protocol.FieldError{Field: at + ".match", Value: r.Match, Allowed: "a client-activated rule without cookie needs a wildcard naming the object (the 201's Location is matched against it)"}
		}
		out.cookies = out.cookies || r.Cookie != ""
		out.list[i] = r
	}
	return out, nil
}

// register adds pattern to mux, turning ServeMux's panic on an invalid or
// conflicting pattern into an error.
func register(mux *http.ServeMux, pattern string, rule int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(error)
			if !ok {
				e = fmt.Errorf("%v", p)
			}
			if u := errors.Unwrap(e); u != nil {
				e = u // "parsing %q: <reason>": the reason
			}
			err = e
		}
	}()
	mux.Handle(pattern, ruleHandler(rule))
	return nil
}

// conflicting returns the index of the earlier rule whose pattern
// ServeMux refuses beside pattern, or -1 (pattern itself is invalid).
func conflicting(earlier []protocol.AffinityRule, pattern string) int {
	if register(http.NewServeMux(), pattern, 0) != nil {
		return -1
	}
	for j, e := range earlier {
		if e.Match == "" {
			continue
		}
		mux := http.NewServeMux()
		if register(mux, e.Match, 0) != nil {
			continue
		}
		if register(mux, pattern, 1) != nil {
			return j
		}
	}
	return -1
}

// wildcards are the names of pattern's wildcards in order ({name} and
// {name...}; not {$}). Pattern is valid (ServeMux accepted it).
func wildcards(pattern string) []string {
	path := pattern
	if i := strings.IndexAny(path, " \t"); i >= 0 {
		path = strings.TrimLeft(path[i:], " \t")
	}
	if i := strings.IndexByte(path, '/'); i >= 0 {
		path = path[i:]
	}
	var names []string
	for seg := range strings.SplitSeq(path, "/") {
		if len(seg) < 2 || seg[0] != '{' || seg[len(seg)-1] != '}' {
			continue
		}
		name := strings.TrimSuffix(seg[1:len(seg)-1], "...")
		if name == "$" {
			continue
		}
		names = append(names, name)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validCookieName reports whether s is an HTTP token (RFC 6265's
// cookie-name).
func validCookieName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return s != ""
}
