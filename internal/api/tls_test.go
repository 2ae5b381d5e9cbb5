package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
)

// A group's tls through the API: a mismatched pair or a non-http group is
// a 400 naming tls; a good pair is stored as paths, advertised https://
// and its expiry exported.
func TestGroupTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, balancer.Options{})
	ca := certstest.NewCA(t)
	a := ca.Leaf(t, "a", certstest.LeafOptions{})
	b := ca.Leaf(t, "b", certstest.LeafOptions{})

	bad := e.call("PUT", "/v1/groups/web", "", group(map[string]any{"tls": map[string]any{"cert": a.CertFile, "key": b.KeyFile}}))
	if er := wantError(t, bad, http.StatusBadRequest, "invalid_value", "tls"); !strings.Contains(er.Allowed, a.CertFile) {
		t.Errorf("a mismatched pair: %+v, want the certificate file named", er)
	}
	giop := e.call("PUT", "/v1/groups/corba", "", group(map[string]any{"protocol": "giop", "tls": map[string]any{"cert": a.CertFile, "key": a.KeyFile}}))
	wantError(t, giop, http.StatusBadRequest, "invalid_value", "tls")

	ok := e.call("PUT", "/v1/groups/web", "", group(map[string]any{"tls": map[string]any{"cert": a.CertFile, "key": a.KeyFile, "min_version": "1.3"}}))
	want(t, ok, http.StatusCreated)
	var st struct {
		Advertise string `json:"advertise"`
		TLS       struct {
			Cert, Key  string
			MinVersion string `json:"min_version"`
		} `json:"tls"`
	}
	ok.decode(t, &st)
	if !strings.HasPrefix(st.Advertise, "https://") || st.TLS.Cert != a.CertFile || st.TLS.Key != a.KeyFile || st.TLS.MinVersion != "1.3" {
		t.Errorf("group status %+v", st)
	}
	m := e.call("GET", "/metrics", "", nil)
	if line := `fulcrum_tls_cert_not_after_timestamp_seconds{listener="group web",name="` + a.CertFile + `"}`; !strings.Contains(string(m.body), line) {
		t.Errorf("/metrics lacks %s", line)
	}
}
