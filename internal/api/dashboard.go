package api

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/dashboard"
)

// codeCrossOrigin answers a browser's cross-origin change (403).
const codeCrossOrigin = "cross_origin"

// handleDashboard serves the dashboard's static files at /ui/ to anyone
// (the page reads and changes state through the routes above, which keep
// their own auth), and redirects /ui there. It is not an API route: the
// OpenAPI file does not list it.
func handleDashboard(mux *http.ServeMux) {
	mux.Handle("GET "+dashboard.Prefix, dashboard.Handler())
	mux.Handle("GET /ui", http.RedirectHandler(dashboard.Prefix, http.StatusMovedPermanently))
}

// crossOriginProtected refuses browsers' cross-origin requests that are
// not GET, HEAD or OPTIONS (http.CrossOriginProtection: by
// Sec-Fetch-Site, else by Origin against Host) with a 403 cross_origin,
// so that a page on another origin cannot drain, remove or reconfigure
// through a browser that holds the dashboard open. Requests without those
// headers (curl, monitors, fulcrum ctl) pass.
func crossOriginProtected(h http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, apiError{
			Code:    codeCrossOrigin,
			Message: "cross-origin " + r.Method + " " + r.URL.Path + " refused: a browser may change the balancer only from a page of the admin API's own origin (such as its /ui/)",
		})
	}))
	return p.Handler(h)
}
