package nginxreplica_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent/nginxreplica"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// nginxBin is Debian's NGINX (scripts/test.sh installs it).
const nginxBin = "/usr/sbin/nginx"

// TestAgentsDocShowsTheExample holds docs/agents.md to the configuration
// the tests and benches run: it must show Example's rendering whole, in
// an nginx code block.
func TestAgentsDocShowsTheExample(t *testing.T) {
	t.Parallel()
	conf, err := nginxreplica.Render(nginxreplica.Example())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	if block := "```nginx\n" + conf + "```\n"; !strings.Contains(string(doc), block) {
		t.Errorf("docs/agents.md does not show the replica configuration; it must contain:\n%s", block)
	}
}

func TestRenderRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    nginxreplica.Config
		want string
	}{
		{"no dir", nginxreplica.Config{Listen: "80"}, `dir ""`},
		{"relative dir", nginxreplica.Config{Dir: "replica1", Listen: "80"}, `dir "replica1", must be an absolute path`},
		{"no listen", nginxreplica.Config{Dir: "/srv/r"}, `listen ""`},
		{"listen with a directive", nginxreplica.Config{Dir: "/srv/r", Listen: "80; user root"}, `listen "80; user root", must be host:port or a port`},
		{"negative index", nginxreplica.Config{Dir: "/srv/r", Listen: "80", Index: -1}, "index -1"},
		{"negative connections", nginxreplica.Config{Dir: "/srv/r", Listen: "80", WorkerConnections: -5}, "worker_connections -5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := nginxreplica.Render(tc.c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render(%+v) = %v, want an error containing %q", tc.c, err, tc.want)
			}
		})
	}
}

// TestRenderOptions checks that each option shows up where NGINX needs it
// and that nothing is written outside Dir.
func TestRenderOptions(t *testing.T) {
	t.Parallel()
	conf, err := nginxreplica.Render(nginxreplica.Config{
		Dir: "/x", Listen: "80", Index: 2, OneProcess: true, User: "root",
		Main: "load_module m.so;\n", Server: "        location /a/ { return 204; }\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"load_module m.so;\nuser root;\ndaemon off;\nmaster_process off;\n",
		"pid /x/nginx.pid;", "error_log /x/error.log warn;", "worker_connections 8192;",
		"client_body_temp_path /x/client_body;", "proxy_temp_path /x/proxy;", "scgi_temp_path /x/scgi;",
		"listen 80 backlog=4096;", "root /x/www;", "add_header X-Replica 2 always;",
		"        location /a/ { return 204; }\n    }\n}\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "/fulcrum/probe") {
		t.Errorf("config passes /fulcrum/probe without an agent:\n%s", conf)
	}
	plain, err := nginxreplica.Render(nginxreplica.Config{Dir: "/x", Listen: "80"})
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"master_process", "user ", "X-Replica"} {
		if strings.Contains(plain, absent) {
			t.Errorf("default config has %q:\n%s", absent, plain)
		}
	}
}

// TestExampleServesAsAnOrdinaryUser runs docs/agents.md's configuration
// (on a free port, in a directory of its own) with the command the doc
// gives, as an unprivileged user (nobody, when the test runs as root):
// it serves a file, /healthz and stub_status, and passes /fulcrum/probe
// to the agent's address.
func TestExampleServesAsAnOrdinaryUser(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(nginxBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing on CI: %v (scripts/test.sh installs nginx)", nginxBin, err)
		}
		t.Skipf("%s missing: %v", nginxBin, err)
	}
	// A directory the unprivileged user owns (t.TempDir's parent is
	// root's alone).
	dir, err := os.MkdirTemp("", "nginxreplica-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	agent := startAgent(t)
	c := nginxreplica.Example()
	c.Dir, c.Listen, c.Agent = dir, freeAddr(t), agent
	conf, err := nginxreplica.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "1k"), make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		const nobody = 65534
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		if err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Chown(path, nobody, nobody)
		}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ng := proctest.Start(t, "nginx", proctest.Options{Wrap: func(cmd *exec.Cmd) error {
		cmd.SysProcAttr.Credential = cred
		return nil
	}}, nginxBin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := "http://" + c.Listen
	proctest.Poll(ctx, t, "NGINX answering /healthz", func() (bool, string) {
		select {
		case <-ng.Done():
			t.Fatalf("nginx exited: %v\n%s", ng.Err(), ng.Stderr)
		default:
		}
		code, body, err := get(base + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK && body == "ok\n", strconv.Itoa(code) + " " + body
	})
	for _, tc := range []struct {
		path string
		want func(body string) bool
	}{
		{"/1k", func(b string) bool { return len(b) == 1024 }},
		{"/nginx_status", func(b string) bool { return strings.HasPrefix(b, "Active connections:") }},
		{"/fulcrum/probe", func(b string) bool { return b == "agent\n" }},
	} {
		code, body, err := get(base + tc.path)
		if err != nil || code != http.StatusOK || !tc.want(body) {
			t.Errorf("GET %s: %d %q %v", tc.path, code, truncate(body), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nginx.pid")); err != nil {
		t.Errorf("pid file not under the directory: %v", err)
	}
}

// startAgent serves "agent\n" on every path, standing in for the agent's
// --listen address, and returns its host:port.
func startAgent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "agent\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(url string) (int, string, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
