//go:build linux

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
)

// A group whose key does not match its certificate stops fulcrum serve
// with status 2, naming the certificate file, before the data dir is made.
func TestTLSMismatchedPairExits2(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	a := ca.Leaf(t, "a", certstest.LeafOptions{})
	b := ca.Leaf(t, "b", certstest.LeafOptions{})
	for _, tc := range []struct{ name, yaml, file string }{
		{"group", fmt.Sprintf("admin: 127.0.0.1:0\ngroups:\n  - name: web\n    front_door: 127.0.0.1:0\n    tls: {cert: %s, key: %s}\n", a.CertFile, b.KeyFile), a.CertFile},
		{"admin", fmt.Sprintf("admin: 127.0.0.1:0\nadmin_tls: {cert: %s, key: %s}\n", b.CertFile, a.KeyFile), b.CertFile},
		{"unreadable", fmt.Sprintf("admin: 127.0.0.1:0\ngroups:\n  - name: web\n    front_door: 127.0.0.1:0\n    tls: {cert: %s, key: %s.gone}\n", a.CertFile, a.KeyFile), a.KeyFile + ".gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 30*time.Second)
			cfg := writeConfig(t, "%s", tc.yaml)
			data := filepath.Join(t.TempDir(), "data")
			code, _, stderr := run(ctx, t, "fulcrum serve", "serve", "--config", cfg, "--data-dir", data)
			if code != 2 || !strings.Contains(stderr, tc.file) || !strings.Contains(stderr, cfg) {
				t.Errorf("exit status %d, want 2 with a message naming %s and %s; stderr:\n%s", code, cfg, tc.file, stderr)
			}
			if _, err := os.Stat(data); err == nil {
				t.Error("the data dir was created by a start with a bad certificate")
			}
		})
	}
}

// fulcrum serve terminates TLS on a group's front door (curl --cacert,
// h2), serves the admin API over mTLS, and reloads the certificates on
// SIGHUP without stopping.
func TestTLSServe(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl")
	ctx := testContext(t, 60*time.Second)
	ca := certstest.NewCA(t)
	door := ca.Leaf(t, "door", certstest.LeafOptions{})
	admin := ca.Leaf(t, "admin", certstest.LeafOptions{})
	client := ca.Leaf(t, "client", certstest.LeafOptions{Client: true})
	rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proto=%s xfp=%s", r.Proto, r.Header.Get("X-Forwarded-Proto"))
	}))
	t.Cleanup(rep.Close)
	fd := freeAddr(t)
	cfg := writeConfig(t, `admin: 127.0.0.1:0
admin_tls: {cert: %s, key: %s, client_ca: %s}
groups:
  - name: web
    front_door: %s
    binding: per-request
    tls: {cert: %s, key: %s}
    replicas:
      - address: %s
`, admin.CertFile, admin.KeyFile, ca.CertFile, fd, door.CertFile, door.KeyFile, rep.URL)
	p := startServe(t, "--config", cfg, "--data-dir", filepath.Join(t.TempDir(), "data"))
	if !strings.HasPrefix(p.admin, "https://") {
		t.Fatalf("admin URL %s, want https://", p.admin)
	}
	_, port, _ := strings.Cut(fd, ":")
	door443 := "https://localhost:" + port + "/"

	for _, v := range []struct{ flag, want string }{{"--http1.1", "proto=HTTP/1.1 xfp=https"}, {"--http2", "proto=HTTP/1.1 xfp=https"}} {
		out := runTool(ctx, t, curl, "-sS", v.flag, "--cacert", ca.CertFile, door443)
		if out != v.want {
			t.Errorf("curl %s: %q, want %q", v.flag, out, v.want)
		}
	}

	// The admin API: refused without a client certificate, served with.
	if out, err := tryTool(ctx, curl, "-sS", "--cacert", ca.CertFile, p.admin+"/healthz"); err == nil {
		t.Errorf("admin API served without a client certificate: %s", out)
	}
	out := runTool(ctx, t, curl, "-sS", "--cacert", ca.CertFile, "--cert", client.CertFile, "--key", client.KeyFile, p.admin+"/healthz")
	if !strings.Contains(out, "ok") {
		t.Errorf("admin /healthz with a client certificate: %q", out)
	}

	// Rotate the front door's and the admin API's files; SIGHUP reloads
	// them and the balancer keeps serving.
	door2 := ca.Leaf(t, "door", certstest.LeafOptions{})
	admin2 := ca.Leaf(t, "admin", certstest.LeafOptions{})
	p.Signal(t, syscall.SIGHUP)
	p.WaitOutput(ctx, t, p.Stderr, regexp.MustCompile(`msg="certificates reloaded"`))
	for _, s := range []struct {
		addr string
		want certstest.Pair
	}{{fd, door2}, {strings.TrimPrefix(p.admin, "https://"), admin2}} {
		c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{client.TLS}})
		if err != nil {
			t.Fatalf("%s after SIGHUP: %v", s.addr, err)
		}
		got := c.ConnectionState().PeerCertificates[0].SerialNumber
		c.Close()
		if got.Cmp(s.want.Cert.SerialNumber) != 0 {
			t.Errorf("%s after SIGHUP: serial %v, want the rotated %v", s.addr, got, s.want.Cert.SerialNumber)
		}
	}
	if out := runTool(ctx, t, curl, "-sS", "--cacert", ca.CertFile, door443); out != "proto=HTTP/1.1 xfp=https" {
		t.Errorf("after SIGHUP: %q", out)
	}
}

// tryTool runs an external tool and returns its combined output and
// error, whatever its exit status.
func tryTool(ctx context.Context, path string, args ...string) (string, error) {
	out, err := osexec.CommandContext(ctx, path, args...).CombinedOutput()
	return string(out), err
}
