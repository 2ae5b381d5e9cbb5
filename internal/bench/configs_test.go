package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// The generated balancer config is one "fulcrum serve" accepts, with the
// groups asked for.
func TestBalancerConfigIsValid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := balancerConfig("127.0.0.1:7123", filepath.Join(dir, "data dir"), []GroupSpec{
		{Name: "per-session", Binding: "per-session", Strategy: "round-robin"},
		{Name: "on-demand", Binding: "on-demand", ReportInterval: 250 * time.Millisecond},
		{Name: "per-request", Binding: "per-request", Strategy: "round-robin", Replicas: []string{"http://127.0.0.1:9001", "http://127.0.0.1:9002"}},
	})
	path := filepath.Join(dir, "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg)
	}
	if f.Admin != "127.0.0.1:7123" || f.DataDir != filepath.Join(dir, "data dir") || len(f.Groups) != 3 {
		t.Fatalf("loaded %+v", f)
	}
	g := f.Groups[2]
	if g.Binding != "per-request" || g.Strategy != "round-robin" || len(g.Replicas) != 2 || g.Replicas[1].Address != "http://127.0.0.1:9002" {
		t.Errorf("per-request group %+v", g)
	}
	if d := f.Groups[1].ReportInterval.D(); d != 250*time.Millisecond {
		t.Errorf("report interval %v", d)
	}
	if f.Groups[0].Health.Path != "/healthz" {
		t.Errorf("health %+v, want probes of /healthz", f.Groups[0].Health)
	}
}

// needCompetitor returns a competitor's executable: a missing one fails
// the test on CI (scripts/test.sh installs it) and skips it elsewhere.
func needCompetitor(t *testing.T, name string) string {
	t.Helper()
	tool := findTool(context.Background(), name, "")
	if tool.Path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true)", tool.Missing)
		}
		t.Skip(tool.Missing)
	}
	if tool.Version == "" {
		t.Errorf("no version found for %s", tool.Path)
	}
	return tool.Path
}

func TestHAProxyConfigIsValid(t *testing.T) {
	t.Parallel()
	path := needCompetitor(t, toolHAProxy)
	cfg := haproxyConfig("127.0.0.1:18080", []string{"http://127.0.0.1:9001"})
	for _, want := range []string{"mode http", "option http-keep-alive", "http-reuse always", "server r1 127.0.0.1:9001 check"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-c", "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
}

func TestNGINXConfigIsValid(t *testing.T) {
	t.Parallel()
	path := needCompetitor(t, toolNGINX)
	dir := t.TempDir()
	errLog := filepath.Join(dir, "error.log")
	cfg := nginxConfig("127.0.0.1:18081", dir, errLog, []string{"http://127.0.0.1:9001"})
	for _, want := range []string{"keepalive 64;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, "daemon off;", "server 127.0.0.1:9001;"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-t", "-p", dir, "-c", file, "-e", errLog).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s\n%s", err, out, cfg)
	}
}

func TestMissingCompetitorSaysHowToInstall(t *testing.T) {
	t.Parallel()
	tool := findTool(context.Background(), toolHAProxy, filepath.Join(t.TempDir(), "no-haproxy"))
	if tool.Path != "" || !strings.Contains(tool.Missing, "apt-get install haproxy") {
		t.Errorf("tool %+v, want missing with how to install it", tool)
	}
}

func TestReplicaNGINXConfigIsValid(t *testing.T) {
	t.Parallel()
	path := needCompetitor(t, toolNGINX)
	dir := t.TempDir()
	errLog := filepath.Join(dir, "error.log")
	cfg, err := replicaNGINXConfig(dir, errLog, 3, NGINXExtra{Server: "        location /extra/ { return 204; }\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"master_process off;", "listen 80 backlog=4096;", "add_header X-Replica 3 always;", "proxy_pass http://127.0.0.1:9100;", "location /extra/ { return 204; }", "error_log " + errLog + " warn;"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-t", "-p", dir, "-c", file, "-e", errLog).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s\n%s", err, out, cfg)
	}
}
