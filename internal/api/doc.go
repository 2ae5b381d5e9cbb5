// Package api is fulcrum's admin API: JSON over HTTP under /v1, described by
// the OpenAPI file served at /v1/openapi.yaml (openapi.yaml in this
// directory, embedded). It is a thin edge over *balancer.Balancer: every
// handler decodes, authorises, calls one balancer method and maps its
// sentinel errors to statuses; it keeps no state of its own.
//
// Usage:
//
//	b, _ := balancer.New(balancer.Options{Store: st})
//	srv := &http.Server{Handler: api.New(b, api.Options{AdminToken: tok})}
//	srv.Serve(ln)
//
// Authorisation: when Options.AdminToken is set, every route but /healthz,
// /readyz and /v1/openapi.yaml needs "Authorization: Bearer <admin token>".
// Registering a replica also accepts a join token, which may then
// deregister the replicas it registered (and no others); a replica's own
// token may drain and deregister it; POST /v1/report takes only replica
// tokens.
//
// A browser's cross-origin request that is not GET, HEAD or OPTIONS is
// refused with 403 cross_origin (http.CrossOriginProtection; dashboard.go).
// The dashboard's static files are served at /ui/ to anyone; it is not an
// API route and the OpenAPI file does not list it.
//
// Errors are always {"error": {"code", "message", "field"?, "allowed"?,
// "existing_id"?}} with the status the code implies (see errors.go).
package api
