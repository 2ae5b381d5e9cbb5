package api_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// TestOpenAPI checks that the served spec parses, that it describes
// exactly the routes the handler serves, and that every $ref resolves.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	a := e.call("GET", "/v1/openapi.yaml", "", nil)
	want(t, a, http.StatusOK)
	if ct := a.header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q", ct)
	}
	var spec map[string]any
	if err := yaml.Unmarshal(a.body, &spec); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if v, _ := spec["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Errorf("openapi version %q, want 3.0.x", v)
	}

	methods := map[string]bool{"get": true, "put": true, "post": true, "patch": true, "delete": true, "head": true, "options": true}
	var documented []string
	paths, _ := spec["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for m, op := range ops {
			if !methods[m] {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+path)
			o, _ := op.(map[string]any)
			if _, ok := o["responses"].(map[string]any); !ok {
				t.Errorf("%s %s has no responses", m, path)
			}
			if _, ok := o["operationId"].(string); !ok {
				t.Errorf("%s %s has no operationId", m, path)
			}
		}
	}
	served := api.Routes()
	sort.Strings(documented)
	sort.Strings(served)
	if strings.Join(documented, "\n") != strings.Join(served, "\n") {
		t.Errorf("the spec and the handler disagree.\nspec:\n%s\n\nserved:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}

	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "$ref" {
					ref, _ := c.(string)
					if !resolves(spec, ref) {
						t.Errorf("$ref %q does not resolve", ref)
					}
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(spec)
}

// TestRoutesAnswerAsDocumented sends every served route a request and
// checks that the status is one the spec lists for it.
func TestRoutesAnswerAsDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	var spec struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(e.call("GET", "/v1/openapi.yaml", "", nil).body, &spec); err != nil {
		t.Fatal(err)
	}
	for _, rt := range api.Routes() {
		method, path, _ := strings.Cut(rt, " ")
		concrete := strings.NewReplacer("{name}", "nope", "{id}", "r-nope").Replace(path)
		var body any
		if method == "PUT" || method == "POST" || method == "PATCH" {
			body = `{}`
		}
		if strings.HasSuffix(path, "/events") {
			continue // a stream; covered by TestEventStream
		}
		a := e.call(method, concrete, "", body)
		code := http.StatusText(a.status)
		op, _ := spec.Paths[path][strings.ToLower(method)].(map[string]any)
		responses, _ := op["responses"].(map[string]any)
		if _, ok := responses[itoa(a.status)]; !ok {
			t.Errorf("%s %s answered %d %s, which the spec does not list", method, concrete, a.status, code)
		}
	}
}

func itoa(n int) string {
	const digits = "0123456789"
	return string([]byte{digits[n/100], digits[n/10%10], digits[n%10]})
}

// resolves reports whether a local JSON pointer exists in spec.
func resolves(spec map[string]any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = spec
	for _, part := range strings.Split(p, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
