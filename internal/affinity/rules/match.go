package rules

import (
	"net/http"
)

// ruleHandler is the handler a rule's pattern is registered with in
// Rules.mux: serving a request records the rule and the request's
// wildcard values in the capture passed as the ResponseWriter.
type ruleHandler int

func (h ruleHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, ok := w.(*capture)
	if !ok {
		return
	}
	c.rule = int(h)
	c.req = r
}

// capture is the ResponseWriter Match passes through the mux: it only
// records which rule's handler ran. Nothing is written.
type capture struct {
	rule int
	req  *http.Request
}

func (c *capture) Header() http.Header         { return http.Header{} }
func (c *capture) Write(b []byte) (int, error) { return len(b), nil }
func (c *capture) WriteHeader(int)             {}

// Match finds the rule covering req (method, host and path; ServeMux's
// precedence: the most specific pattern wins) and the object's key (the
// rule's wildcard value, "" for a pattern without wildcards). ok is false
// when no rule matches, or when ServeMux would answer req itself (a
// redirect to the cleaned path, 405): the call is then single-call.
// req is not modified.
func (r *Rules) Match(req *http.Request) (rule Rule, key string, ok bool) {
	if r == nil || r.mux == nil {
		return Rule{}, "", false
	}
	c := capture{rule: -1}
	// ServeMux records its match (Pattern, path values) in the request it
	// serves: match a shallow copy, so that req, which the front door
	// goes on to forward, is left as it was.
	cp := new(http.Request)
	*cp = *req
	r.mux.ServeHTTP(&c, cp)
	if c.rule < 0 {
		return Rule{}, "", false
	}
	rule = r.list[c.rule]
	if rule.Key != "" {
		key = c.req.PathValue(rule.Key)
	}
	return rule, key, true
}
