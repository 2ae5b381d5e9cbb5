package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A reload applies admin_token, join_token, log_level, log_format,
// access_log and shutdown_timeout at once, lists a changed data_dir,
// http_engine, store and instance under restart_required, and re-reads certificates even when
// it refuses the file.
func TestReloadAppliesSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fulcrum.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	group := "groups:\n  - name: a\n    front_door: 127.0.0.1:0\n    binding: per-request\n"
	write("admin: 127.0.0.1:0\ndata_dir: " + data + "\nadmin_token: old-token\njoin_token: join-1\n" + group)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := balancer.New(balancer.Options{Store: st, Logger: quiet, JoinToken: cfg.JoinToken})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	}()
	if err := b.ApplyConfig(cfg.Groups); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	level := new(slog.LevelVar)
	var logged syncBuffer
	logH := newLogHandler(&logged, level, cfg.LogFormat)
	access := &accessSink{}
	defer access.close()
	token := api.NewAdminToken(cfg.AdminToken)
	certReloads := 0
	rl := &reloader{path: path, override: func(*config.File) {}, b: b, log: slog.New(logH), level: level, access: access, logOut: io.Discard, token: token,
		reloadCertificates: func() error { certReloads++; return nil }, logFormat: logH.setFormat, started: cfg, cur: cfg}
	srv := httptest.NewServer(api.New(b, api.Options{Token: token, Reload: rl.reload, Logger: quiet}))
	defer srv.Close()
	hc := srv.Client()
	do := func(method, path, tok string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	accessPath := filepath.Join(dir, "access.log")
	write("admin: 127.0.0.1:0\ndata_dir: " + filepath.Join(dir, "elsewhere") + "\nhttp_engine: stdlib\nadmin_token: new-token\njoin_token: join-2\n" +
		"store: {etcd: {endpoints: ['http://127.0.0.1:1']}}\ninstance: {name: other}\n" +
		"log_level: debug\nlog_format: json\naccess_log: " + accessPath + "\nshutdown_timeout: 3s\n" + group)
	code, body := do("POST", "/v1/reload", "old-token")
	var res protocol.ReloadResult
	if err := json.Unmarshal(body, &res); code != http.StatusOK || err != nil {
		t.Fatalf("POST /v1/reload: %d %s", code, body)
	}
	if !slices.Equal(res.RestartRequired, []string{"data_dir", "http_engine", "instance", "store"}) || len(res.Added)+len(res.Changed)+len(res.Removed) != 0 {
		t.Errorf("reload result %+v, want only data_dir, http_engine, instance and store under restart_required", res)
	}
	// log_format json: the reload's own closing lines are JSON already.
	if out := logged.String(); !strings.Contains(out, "\n{") || !strings.Contains(out, `"msg":"config file reloaded"`) {
		t.Errorf("log after log_format: json:\n%s\nwant the reload's closing lines as JSON", out)
	}
	if code, _ := do("GET", "/v1/groups", "old-token"); code != http.StatusUnauthorized {
		t.Errorf("the old admin token after the reload: %d, want 401", code)
	}
	if code, _ := do("GET", "/v1/groups", "new-token"); code != http.StatusOK {
		t.Errorf("the new admin token after the reload: %d, want 200", code)
	}
	if !b.JoinAllowed("a", "join-2") || b.JoinAllowed("a", "join-1") {
		t.Errorf("join tokens after the reload: join-2 %v, join-1 %v; want only join-2", b.JoinAllowed("a", "join-2"), b.JoinAllowed("a", "join-1"))
	}
	if level.Level() != slog.LevelDebug {
		t.Errorf("log level %v after the reload, want debug", level.Level())
	}
	if got := rl.shutdownTimeout().D(); got != 3*time.Second {
		t.Errorf("shutdown_timeout %v after the reload, want 3s", got)
	}
	// The access log, off at start, now gets a line per front door call.
	gs, err := b.Group("a")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + gs.Listening + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if b, _ := os.ReadFile(accessPath); strings.Contains(string(b), "/hello") {
			if !json.Valid(bytes.TrimSpace(b)) {
				t.Errorf("access log line %q is not JSON under log_format: json", b)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no access log line for the call in %s", accessPath)
		case <-time.After(5 * time.Millisecond):
		}
	}

	// SIGUSR1's reopen reopens the file the reload opened.
	if path, ok, err := access.reopen(); path != accessPath || !ok || err != nil {
		t.Errorf("access log reopen after the reload: %q, %v, %v; want %s reopened", path, ok, err, accessPath)
	}

	// A refused file still re-reads certificates, and changes nothing.
	before := certReloads
	write("admin_token: x y\n")
	code, body = do("POST", "/v1/reload", "new-token")
	if code != http.StatusBadRequest || !strings.Contains(string(body), `"code":"invalid_config"`) || !strings.Contains(string(body), "admin_token") {
		t.Errorf("reload of a bad file: %d %s", code, body)
	}
	if certReloads != before+1 {
		t.Errorf("certificates re-read %d times by a refused reload, want 1", certReloads-before)
	}
	if code, _ := do("GET", "/v1/groups", "new-token"); code != http.StatusOK {
		t.Errorf("a refused reload changed the admin token: %d", code)
	}
}
