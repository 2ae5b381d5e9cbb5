package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A reload that turns admin_tls on, points it at another certificate, or
// turns it off applies to the admin API's next connections and to the
// report URL registering replicas are told.
func TestAdminTLSAppliedAtReload(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.DiscardHandler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpURL := "http://" + ln.Addr().String()
	aln := &adminListener{Listener: ln}
	b, err := balancer.New(balancer.Options{Store: st, Logger: quiet, AdminURL: httpURL})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	}()
	if err := b.ApplyConfig([]protocol.Group{{Name: "a", FrontDoor: "127.0.0.1:0", Binding: protocol.OnDemand}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Scheme+"ok")
	})}
	go func() { _ = srv.Serve(aln) }()
	defer srv.Close()
	sw := &adminTLSSwitch{ln: aln, b: b, log: quiet, httpURL: httpURL}

	ca := certstest.NewCA(t)
	first, second := ca.Leaf(t, "admin1", certstest.LeafOptions{}), ca.Leaf(t, "admin2", certstest.LeafOptions{})
	get := func(scheme string) (*http.Response, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
		return c.Get(scheme + "://" + ln.Addr().String() + "/")
	}
	port := 0
	reportURL := func() string {
		t.Helper()
		port++
		reg, _, err := b.Register("a", protocol.Registration{Address: fmt.Sprintf("http://127.0.0.1:%d", port)})
		if err != nil {
			t.Fatal(err)
		}
		return reg.ReportURL
	}
	var cfg config.File
	if resp, err := get("http"); err != nil {
		t.Fatalf("plain admin API before admin_tls: %v", err)
	} else {
		resp.Body.Close()
	}

	for _, pair := range []certstest.Pair{first, second} {
		next := cfg
		next.AdminTLS = config.AdminTLS{Cert: pair.CertFile, Key: pair.KeyFile}
		if err := sw.apply(cfg, next); err != nil {
			t.Fatal(err)
		}
		cfg = next
		resp, err := get("https")
		if err != nil {
			t.Fatalf("https after admin_tls %s: %v", pair.CertFile, err)
		}
		resp.Body.Close()
		if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(pair.Cert.SerialNumber) != 0 {
			t.Errorf("admin API serves serial %v, want %v (%s)", got, pair.Cert.SerialNumber, pair.CertFile)
		}
		// net/http answers plain HTTP on a TLS connection with a 400.
		if resp, err := get("http"); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("plain HTTP answered %d with admin_tls on, want a refusal", resp.StatusCode)
			}
		}
		if u := reportURL(); !strings.HasPrefix(u, "https://"+ln.Addr().String()) {
			t.Errorf("report URL %q with admin_tls on, want https://%s/...", u, ln.Addr())
		}
	}

	next := cfg
	next.AdminTLS = config.AdminTLS{}
	if err := sw.apply(cfg, next); err != nil {
		t.Fatal(err)
	}
	resp, err := get("http")
	if err != nil {
		t.Fatalf("plain admin API after admin_tls was removed: %v", err)
	}
	resp.Body.Close()
	if u := reportURL(); !strings.HasPrefix(u, httpURL) {
		t.Errorf("report URL %q after admin_tls was removed, want %s/...", u, httpURL)
	}
}
