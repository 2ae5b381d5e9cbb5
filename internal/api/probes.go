package api

import (
	_ "embed"
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
)

// health is the body of /healthz and of a ready /readyz.
type health struct {
	Status string `json:"status"`
	buildinfo.Info
}

// healthz answers 200 while the process serves HTTP.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, health{Status: "ok", Info: s.opts.Build})
}

// readyz answers 200 when every group's front door is serving and the
// store (etcd) answers, else 503 saying why.
func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.storeNotReady(w) { // degraded.go
		return
	}
	if !s.b.Ready() {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: codeNotReady, Message: "not ready: a front door is not serving or the balancer is shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, health{Status: "ready", Info: s.opts.Build})
}

// openAPISpec is the API's OpenAPI 3.0 description.
//
//go:embed openapi.yaml
var openAPISpec []byte

func (s *server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPISpec)
}
