package tcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needTool returns a competitor's executable: a missing one fails the test
// on CI (scripts/test.sh installs it) and skips it elsewhere.
func needTool(t *testing.T, name, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		msg := name + " is not installed at " + path + " (scripts/test.sh installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true)", msg)
		}
		t.Skip(msg)
	}
	return path
}

// HAProxy accepts the TCP configuration (haproxy -c), which has the
// settings the experiment promises.
func TestHAProxyTCPConfigIsValid(t *testing.T) {
	t.Parallel()
	path := needTool(t, "haproxy", "/usr/sbin/haproxy")
	cfg := haproxyConfig("127.0.0.1:18080", []string{"127.0.0.1:9001", "127.0.0.1:9002"}, 11024)
	for _, want := range []string{"mode tcp", "nbthread 2", "option splice-auto", "maxconn 11024", "server r2 127.0.0.1:9002 check"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
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

// NGINX loads the stream module and accepts the configuration (nginx -t).
func TestNGINXStreamConfigIsValid(t *testing.T) {
	t.Parallel()
	path := needTool(t, "nginx", "/usr/sbin/nginx")
	needTool(t, "libnginx-mod-stream", NGINXStreamModule)
	dir := t.TempDir()
	errLog := filepath.Join(dir, "error.log")
	cfg := nginxConfig("127.0.0.1:18081", dir, errLog, []string{"127.0.0.1:9001", "127.0.0.1:9002"}, 10000)
	for _, want := range []string{"load_module " + NGINXStreamModule, "stream {", "proxy_pass replicas;", "worker_connections 20064;", "server 127.0.0.1:9002;"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
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

// The memory of this very process reads as a positive RSS and open
// descriptors.
func TestReadProcMemory(t *testing.T) {
	t.Parallel()
	m, err := readProcMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSSBytes <= 0 || m.FDs < 3 {
		t.Errorf("readProcMemory(self) = %+v, want a positive RSS and at least stdin, stdout, stderr", m)
	}
	if _, err := readProcMemory(1 << 30); err == nil {
		t.Error("readProcMemory of a pid that cannot exist: no error")
	}
}
