package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
)

// env is a real balancer over a real bbolt store, behind the admin API on a
// real socket.
type env struct {
	t   *testing.T
	b   *balancer.Balancer
	srv *httptest.Server
	// admin is the admin token (may be empty), used by the must* helpers.
	admin string
}

// newEnv starts a balancer and its admin API. opts.Logger defaults to a
// discarding logger.
func newEnv(t *testing.T, opts api.Options, bopts balancer.Options) *env {
	t.Helper()
	if bopts.Store == nil { // else the test's, which it closes
		st, err := boltstore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		bopts.Store = st
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.Logger == nil {
		opts.Logger = log
	}
	srv := httptest.NewUnstartedServer(nil)
	bopts.Logger = log
	bopts.AdminURL = "http://" + srv.Listener.Addr().String()
	bopts.AdminAddr = srv.Listener.Addr().String()
	b, err := balancer.New(bopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.New(b, opts)
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &env{t: t, b: b, srv: srv, admin: opts.AdminToken}
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// errorBody decodes an error answer.
func (a answer) err(t *testing.T) apiErr {
	t.Helper()
	var eb struct {
		Error *apiErr `json:"error"`
	}
	if err := json.Unmarshal(a.body, &eb); err != nil || eb.Error == nil {
		t.Fatalf("not an error body (status %d): %s", a.status, a.body)
	}
	return *eb.Error
}

type apiErr struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Field      string `json:"field"`
	Allowed    string `json:"allowed"`
	ExistingID string `json:"existing_id"`
}

// decode decodes a JSON answer into v.
func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// call sends a request. body is sent as is when it is a string or []byte,
// and as JSON otherwise (nil: no body). token, when set, is a bearer token.
func (e *env) call(method, path, token string, body any, hdr ...string) answer {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// want fails unless a has status.
func want(t *testing.T, a answer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
}

// wantError fails unless a is an error answer with status, code and field.
func wantError(t *testing.T, a answer, status int, code, field string) apiErr {
	t.Helper()
	want(t, a, status)
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	e := a.err(t)
	if e.Code != code || e.Field != field {
		t.Fatalf("error %+v, want code %q field %q", e, code, field)
	}
	if e.Message == "" {
		t.Errorf("error without a message: %s", a.body)
	}
	if status == http.StatusUnauthorized && a.header.Get("WWW-Authenticate") == "" {
		t.Errorf("401 without WWW-Authenticate")
	}
	return e
}

// group is a minimal group body on a free loopback port.
func group(extra map[string]any) map[string]any {
	g := map[string]any{"front_door": "127.0.0.1:0", "report_interval": "20ms"}
	for k, v := range extra {
		g[k] = v
	}
	return g
}

// registered is the answer of a registration.
type registered struct {
	ID             string `json:"id"`
	Token          string `json:"token"`
	FrontDoor      string `json:"front_door"`
	ReportURL      string `json:"report_url"`
	ReportInterval string `json:"report_interval"`
}

// mustGroup creates group name.
func (e *env) mustGroup(name string, extra map[string]any) {
	e.t.Helper()
	want(e.t, e.call("PUT", "/v1/groups/"+name, e.admin, group(extra)), http.StatusCreated)
}

// mustRegister registers address in group.
func (e *env) mustRegister(name, address string) registered {
	e.t.Helper()
	a := e.call("POST", "/v1/groups/"+name+"/replicas", e.admin, map[string]any{"address": address})
	want(e.t, a, http.StatusCreated)
	var r registered
	a.decode(e.t, &r)
	return r
}
