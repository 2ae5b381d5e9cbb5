// Package dashboard serves fulcrum's web dashboard: plain HTML, CSS and
// JavaScript embedded in the binary, plus the uPlot chart library vendored
// unmodified under static/vendor/uplot (its VERSION file pins the version
// and the sha256 of each file; TestVendoredChecksums holds them).
//
// The handler serves static files only, to anyone: the page reads and
// changes the balancer through the admin API's own routes, with the admin
// token the user gives it, so the API's auth rules apply unchanged. Mount
// it at Prefix:
//
//	mux.Handle("GET "+dashboard.Prefix, dashboard.Handler())
//
// docs/dashboard.md describes the page.
package dashboard
