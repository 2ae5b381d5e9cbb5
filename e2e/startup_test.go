//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An invalid config file stops fulcrum serve with status 2, naming the
// file and line and the key, before it creates the data dir.
func TestInvalidConfigExits2(t *testing.T) {
	t.Parallel()
	const head = "admin: 127.0.0.1:0\ngroups:\n  - name: prime\n"
	for _, tc := range []struct {
		name string
		yaml string
		line int
		key  string
	}{
		{"invalid value", head + "    front_door: 127.0.0.1:0\n    binding: sometimes\n", 5, "groups[0].binding"},
		{"unknown key", head + "    frontdoor: 127.0.0.1:0\n", 4, "groups[0].frontdoor"},
		{"bare number for a duration", head + "    front_door: 127.0.0.1:0\n    report_interval: 500\n", 5, "groups[0].report_interval"},
		{"strategy param out of range", head + "    front_door: 127.0.0.1:0\n    params: {dampening: 1.2}\n", 5, "groups[0].params.dampening"},
		{"unknown top-level key", "admin: 127.0.0.1:0\nadmn: 127.0.0.1:7070\n", 2, "admn"},
		{"wrong type", "admin: 127.0.0.1:0\ngroups: {name: prime}\n", 2, "groups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 30*time.Second)
			cfg := writeConfig(t, "%s", tc.yaml)
			data := filepath.Join(t.TempDir(), "data")
			code, _, stderr := run(ctx, t, "fulcrum serve", "serve", "--config", cfg, "--data-dir", data)
			if code != 2 {
				t.Errorf("exit status %d, want 2; stderr:\n%s", code, stderr)
			}
			if want := fmt.Sprintf("%s:%d: %s", cfg, tc.line, tc.key); !strings.Contains(stderr, want) {
				t.Errorf("stderr does not name %q:\n%s", want, stderr)
			}
			if _, err := os.Stat(data); err == nil {
				t.Errorf("the data dir was created by a start with an invalid config")
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 30*time.Second)
		cfg := filepath.Join(t.TempDir(), "nope.yaml")
		code, _, stderr := run(ctx, t, "fulcrum serve", "serve", "--config", cfg, "--data-dir", filepath.Join(t.TempDir(), "data"))
		if code != 2 || !strings.Contains(stderr, cfg) || !strings.Contains(stderr, "cannot read") {
			t.Errorf("exit status %d, want 2 and a message naming %s; stderr:\n%s", code, cfg, stderr)
		}
	})
}

// The admin API refuses a non-loopback address without admin_token,
// unless --insecure; with admin_token it serves and requires it.
func TestAdminExposure(t *testing.T) {
	t.Parallel()

	t.Run("refused without admin_token", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 30*time.Second)
		data := filepath.Join(t.TempDir(), "data")
		code, _, stderr := run(ctx, t, "fulcrum serve", "serve", "--admin", "0.0.0.0:0", "--data-dir", data)
		if code == 0 {
			t.Fatalf("fulcrum serve --admin 0.0.0.0:0 without admin_token exited 0; stderr:\n%s", stderr)
		}
		for _, want := range []string{"0.0.0.0:0", "non-loopback", "admin_token", "--insecure"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the refusal does not mention %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("--insecure", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 30*time.Second)
		hc := apiClient(t)
		bal := startServe(t, "--admin", "0.0.0.0:0", "--insecure", "--data-dir", filepath.Join(t.TempDir(), "data"))
		admin := "http://127.0.0.1:" + bal.admin[strings.LastIndexByte(bal.admin, ':')+1:]
		mustCall(ctx, t, hc, http.MethodGet, admin+"/v1/groups", nil, http.StatusOK, nil)
		bal.Signal(t, syscall.SIGTERM)
		if code := bal.Exit(ctx, t); code != 0 {
			t.Errorf("exit status %d after SIGTERM, want 0", code)
		}
	})

	t.Run("with admin_token", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 30*time.Second)
		hc := apiClient(t)
		cfg := writeConfig(t, "admin: 0.0.0.0:0\nadmin_token: e2e-secret-token\ndata_dir: %s\n", filepath.Join(t.TempDir(), "data"))
		bal := startServe(t, "--config", cfg)
		admin := "http://127.0.0.1:" + bal.admin[strings.LastIndexByte(bal.admin, ':')+1:]
		mustCall(ctx, t, hc, http.MethodGet, admin+"/v1/groups", nil, http.StatusUnauthorized, nil)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/v1/groups", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer e2e-secret-token")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/groups with the admin token: status %d, want 200", resp.StatusCode)
		}
	})
}
