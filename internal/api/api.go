package api

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds admin request bodies (1 MiB).
	DefaultMaxBodyBytes = 1 << 20
	// DefaultHeartbeat is the interval of comment lines on an idle event
	// stream, which keep proxies from closing it.
	DefaultHeartbeat = 15 * time.Second
)

// Options configure the admin API handler.
type Options struct {
	// AdminToken, when not empty, is required as "Authorization: Bearer
	// <token>" on every admin route.
	AdminToken string
	// Token, when not nil, holds the admin token instead of AdminToken,
	// and may be changed while the API serves (a config reload).
	Token *AdminToken
	// Reload re-reads the config file and applies it (POST /v1/reload).
	// Nil when the balancer was started without a config file: the route
	// then answers 409. An error that is a *ConfigError is answered 400
	// invalid_config with its errors.
	Reload func() (protocol.ReloadResult, error)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Build is reported by /healthz and /readyz; its Version also by the
	// fulcrum_build_info metric.
	Build buildinfo.Info
	// MaxBodyBytes bounds JSON request bodies; DefaultMaxBodyBytes when 0.
	// Load reports are bounded by protocol.MaxReportBytes instead.
	MaxBodyBytes int64
	// Heartbeat is the event stream's heartbeat interval; DefaultHeartbeat
	// when 0.
	Heartbeat time.Duration
	// Cluster, when set, describes the cluster for GET /v1/cluster (its
	// Leaders are replaced by Options.Leaders'); ctx is the request's.
	// Without it the route answers a single node listing no instance.
	Cluster func(ctx context.Context) protocol.Cluster
	// Leaders, when set, maps each group with a leader to the instance
	// leading it, for GET /v1/cluster; an empty object when nil.
	Leaders func() map[string]string
	// Collectors are more metrics served on /metrics (the etcd store's,
	// the leadership's).
	Collectors []prometheus.Collector
}

// server holds the handler's dependencies. It keeps no state of its own.
type server struct {
	b    *balancer.Balancer
	opts Options
	log  *slog.Logger
	auth authenticator
	// prom serves /metrics.
	prom http.Handler
}

// access says who may call a route.
type access int

const (
	// public routes need no token.
	public access = iota
	// admin routes need the admin token (when one is set).
	admin
	// joiner routes take the admin token or a join token of the group.
	joiner
	// self routes take the admin token, the join token of the group that
	// registered the replica, or the replica's own token ({name} and {id}
	// in the path).
	self
	// drainSelf routes take the admin token or the replica's own token.
	drainSelf
	// replica routes authenticate the replica token themselves.
	replica
	// stream routes take the admin token in the header or in ?token=.
	stream
	// groupReplica routes take only the token of a replica of the group
	// ({name}), even when no admin token is set; never the admin token
	// (replog.go). The handler finds the replica's id with replicaOf.
	groupReplica
)

// route is one entry of the API: a method, a ServeMux path pattern, who may
// call it and its handler.
type route struct {
	method  string
	path    string
	access  access
	handler func(s *server, w http.ResponseWriter, r *http.Request)
}

// routes is the API. The OpenAPI file lists exactly these (tested).
var routes = []route{
	{http.MethodGet, "/healthz", public, (*server).healthz},
	{http.MethodGet, "/readyz", public, (*server).readyz},
	{http.MethodGet, "/metrics", admin, (*server).metrics},
	{http.MethodGet, "/v1/openapi.yaml", public, (*server).openapi},
	{http.MethodGet, "/v1/groups", admin, (*server).listGroups},
	{http.MethodGet, "/v1/groups/{name}", admin, (*server).getGroup},
	{http.MethodPut, "/v1/groups/{name}", admin, (*server).putGroup},
	{http.MethodPatch, "/v1/groups/{name}", admin, (*server).patchGroup},
	{http.MethodDelete, "/v1/groups/{name}", admin, (*server).deleteGroup},
	{http.MethodGet, "/v1/events", stream, (*server).allEvents},
	{http.MethodGet, "/v1/groups/{name}/events", stream, (*server).events},
	{http.MethodPost, "/v1/groups/{name}/replicas", joiner, (*server).register},
	{http.MethodDelete, "/v1/groups/{name}/replicas/{id}", self, (*server).removeReplica},
	{http.MethodPost, "/v1/groups/{name}/replicas/{id}/drain", drainSelf, (*server).drain},
	{http.MethodPost, "/v1/groups/{name}/replicas/{id}/activate", admin, (*server).activate},
	{http.MethodPost, "/v1/groups/{name}/blocks", admin, (*server).block},
	{http.MethodDelete, "/v1/groups/{name}/blocks", admin, (*server).unblock},
	{http.MethodGet, "/v1/groups/{name}/connections", admin, (*server).connections},
	{http.MethodGet, "/v1/groups/{name}/sessions", admin, (*server).sessions},
	{http.MethodGet, "/v1/groups/{name}/log", groupReplica, (*server).logStream},
	{http.MethodPost, "/v1/groups/{name}/log/applied", groupReplica, (*server).logApplied},
	{http.MethodPost, "/v1/groups/{name}/log/replies", groupReplica, (*server).logReplies},
	{http.MethodPost, "/v1/groups/{name}" + balancer.ReplyRequestPath, admin, (*server).logAsk},
	{http.MethodPost, "/v1/groups/{name}/outcalls", groupReplica, (*server).outcall},
	{http.MethodPost, "/v1/groups/{name}/workflows", admin, (*server).submitWorkflow},
	{http.MethodGet, "/v1/groups/{name}/workflows", admin, (*server).listWorkflows},
	{http.MethodGet, "/v1/groups/{name}/workflows/{id}", admin, (*server).getWorkflow},
	{http.MethodDelete, "/v1/groups/{name}/workflows/{id}", admin, (*server).cancelWorkflow},
	{http.MethodPost, "/v1/report", replica, (*server).report},
	{http.MethodPost, "/v1/reload", admin, (*server).reload},
	{http.MethodGet, "/v1/cluster", admin, (*server).cluster},
	{http.MethodPost, "/v1/cluster/loads", admin, (*server).loads},
	{http.MethodPost, "/v1/cluster/bound", admin, (*server).bound},
}

// New returns the admin API handler over b.
func New(b *balancer.Balancer, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Token == nil {
		opts.Token = NewAdminToken(opts.AdminToken)
	}
	s := &server{b: b, opts: opts, log: opts.Logger, auth: newAuthenticator(b, opts.Token), prom: newMetricsHandler(b, opts.Build.Version, opts.Collectors...)}

	mux := http.NewServeMux()
	methods := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, s.guard(rt.access, rt.handler))
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	// A path with no route for the method: 405 in JSON, with Allow. The
	// method-less pattern is less specific than the routes above, so it
	// only sees the other methods.
	for path, ms := range methods {
		allow := allowHeader(ms)
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, apiError{
				Code:    codeMethodNotAllowed,
				Message: "method " + r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + allow,
			})
		})
	}
	handleDashboard(mux) // dashboard.go
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apiError{Code: codeNotFound, Message: "no such endpoint: " + r.URL.Path + " (see /v1/openapi.yaml)"})
	})
	return crossOriginProtected(mux)
}

// allowHeader lists methods for an Allow header; GET implies HEAD.
func allowHeader(ms []string) string {
	set := map[string]bool{}
	for _, m := range ms {
		set[m] = true
		if m == http.MethodGet {
			set[http.MethodHead] = true
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
