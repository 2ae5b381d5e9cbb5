package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui/"

// static holds the page and its vendored library.
//
//go:embed static
var static embed.FS

// contentSecurityPolicy lets the page load and call nothing but its own
// origin: no external requests, no inline script, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the dashboard's files for requests under Prefix (GET
// and HEAD); a path that names no file is answered 404. Safe for
// concurrent use.
func Handler() http.Handler {
	files := http.StripPrefix(Prefix, http.FileServerFS(Files()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// Files is the dashboard's file tree (index.html at its root).
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("dashboard: the embedded tree has no static directory: " + err.Error()) // construction-time precondition
	}
	return sub
}
