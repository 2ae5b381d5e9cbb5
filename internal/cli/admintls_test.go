package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tlsAdmin is a real balancer behind the admin API served over TLS with a
// certificate of ca; with clientCA it requires a client certificate the
// CA signed (mTLS).
func tlsAdmin(t *testing.T, ca, clientCA *certstest.CA) (string, *balancer.Balancer) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: quiet, AdminURL: "https://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	leaf := ca.Leaf(t, "admin", certstest.LeafOptions{})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLS}}
	if clientCA != nil {
		srv.TLS.ClientCAs = clientCA.Pool()
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	}
	srv.Config.Handler = api.New(b, api.Options{Logger: quiet})
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return srv.URL, b
}

// TestCtlAdminTLS: ctl reaches an https:// admin API with --cacert, and
// with --cert and --key when it requires a client certificate; without
// them the call fails (exit 1); unusable files are usage errors (exit 2)
// naming the flag.
func TestCtlAdminTLS(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	pair := clients.Leaf(t, "ctl", certstest.LeafOptions{Names: []string{"ctl"}, Client: true})
	tlsURL, _ := tlsAdmin(t, ca, nil)
	mtlsURL, _ := tlsAdmin(t, ca, clients)

	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // in stdout when code is 0, else in stderr
	}{
		{"verified with --cacert", []string{"--admin", tlsURL, "--cacert", ca.CertFile}, 0, "no groups"},
		{"system roots only", []string{"--admin", tlsURL}, 1, "certificate"},
		{"mTLS with --cert and --key", []string{"--admin", mtlsURL, "--cacert", ca.CertFile, "--cert", pair.CertFile, "--key", pair.KeyFile}, 0, "no groups"},
		{"mTLS without a client certificate", []string{"--admin", mtlsURL, "--cacert", ca.CertFile}, 1, ""},
		{"--cert without --key", []string{"--admin", mtlsURL, "--cacert", ca.CertFile, "--cert", pair.CertFile}, 2, "--cert and --key must be given together"},
		{"unreadable --cacert", []string{"--admin", tlsURL, "--cacert", ca.CertFile + ".missing"}, 2, `--cacert: invalid value "` + ca.CertFile + `.missing"`},
		{"--key of another certificate", []string{"--admin", mtlsURL, "--cert", pair.CertFile, "--key", ca.Leaf(t, "stray", certstest.LeafOptions{Client: true}).KeyFile}, 2, "--cert: invalid value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := runCtl(t, "", append([]string{"ctl"}, append(tt.args, "groups")...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.code, out, errOut)
			}
			got := out
			if code != 0 {
				got = errOut
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("output %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// TestBackendPrimeTLS runs "fulcrum backend prime --tls-cert --tls-key"
// registering through an mTLS admin API (--cacert, --cert, --key): it
// registers its https:// URL, and a per-request group whose replica_tls
// holds the CA proxies calls to it (curl through the front door).
func TestBackendPrimeTLS(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is needed: %v", err)
		}
		t.Skip("curl not installed")
	}
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	pair := clients.Leaf(t, "backend", certstest.LeafOptions{Names: []string{"backend"}, Client: true})
	serving := ca.Leaf(t, "prime", certstest.LeafOptions{})
	admin, b := tlsAdmin(t, ca, clients)
	st, _, err := b.PutGroup(protocol.Group{Name: "tp", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, ReportInterval: protocol.Duration(50 * time.Millisecond), ReplicaTLS: protocol.ReplicaTLS{CA: ca.CertFile}})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot()
	var out, errOut syncBuffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"backend", "prime", "--listen", "127.0.0.1:0", "--tls-cert", serving.CertFile, "--tls-key", serving.KeyFile,
		"--register", admin, "--group", "tp", "--cacert", ca.CertFile, "--cert", pair.CertFile, "--key", pair.KeyFile})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var replica string
	waitCLI(t, done, &errOut, "the backend's registration", func() bool {
		g, err := b.Group("tp")
		if err != nil || len(g.Replicas) != 1 {
			return false
		}
		replica = g.Replicas[0].Address
		return true
	})
	if !strings.HasPrefix(replica, "https://127.0.0.1:") || !strings.HasPrefix(out.String(), "listening on "+replica) {
		t.Fatalf("registered %q, printed %q; want the same https:// URL", replica, out.String())
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	for _, proto := range []string{"--http1.1", "--http2"} {
		direct, err := exec.CommandContext(cctx, curl, "-sS", "--fail", proto, "-w", " HTTP/%{http_version}", "--cacert", ca.CertFile, replica+"/prime/13").CombinedOutput()
		want := map[string]string{"--http1.1": " HTTP/1.1", "--http2": " HTTP/2"}[proto]
		if err != nil || !strings.Contains(string(direct), `"prime":true`) || !strings.HasSuffix(string(direct), want) {
			t.Errorf("curl %s --cacert to the backend: %q, %v; want the answer over%s", proto, direct, err, want)
		}
	}
	proxied, err := exec.CommandContext(cctx, curl, "-sS", "--fail", st.Advertise+"/prime/13").CombinedOutput()
	if err != nil || !strings.Contains(string(proxied), `"prime":true`) {
		t.Errorf("curl through the front door: %q, %v", proxied, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("backend: %v\n%s", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("backend did not stop within 10s of its context ending")
	}
}

// TestAgentAdminTLSFlags: the agents take --cacert, --cert and --key, and
// refuse unusable files before they start.
func TestAgentAdminTLSFlags(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	for _, args := range [][]string{
		{"agent", "http", "--target", "http://127.0.0.1:1", "--pid", strconv.Itoa(os.Getpid()), "--register", "https://127.0.0.1:1", "--group", "g", "--cacert", ca.CertFile + ".missing"},
		{"agent", "giop", "--listen", "127.0.0.1:0", "--target", "corbaloc:iiop:127.0.0.1:1/Prime", "--register", "https://127.0.0.1:1", "--group", "g", "--cacert", ca.CertFile + ".missing"},
		{"backend", "prime", "--listen", "127.0.0.1:0", "--register", "https://127.0.0.1:1", "--group", "g", "--cacert", ca.CertFile + ".missing"},
	} {
		t.Run(args[0]+" "+args[1], func(t *testing.T) {
			t.Parallel()
			_, errOut, code := runCtl(t, "", args...)
			if code != 2 || !strings.Contains(errOut, "--cacert: invalid value") {
				t.Errorf("exit %d, %q; want 2 naming --cacert", code, errOut)
			}
		})
	}
	_, errOut, code := runCtl(t, "", "backend", "prime", "--listen", "127.0.0.1:0", "--tls-cert", ca.CertFile)
	if code != 2 || !strings.Contains(errOut, "--tls-cert and --tls-key must be given together") {
		t.Errorf("--tls-cert alone: exit %d, %q; want 2", code, errOut)
	}
}
