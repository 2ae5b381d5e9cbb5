package cli

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// tlsPeer serves 200 on a real socket with TLS config cfg and returns
// its https:// base URL.
func tlsPeer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(tls.NewListener(ln, cfg))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return "https://" + ln.Addr().String()
}

// call GETs url with the peers' client of p.
func call(p *peerTLS, url string) error {
	resp, err := p.client().Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// TestPeerTLS: the calls to the other instances verify their admin
// certificates with instance.peer_ca, by default with the system roots
// plus admin_tls.client_ca, present the admin pair when the admin API
// requires client certificates, and keep their files when a reload
// names one that cannot be read.
func TestPeerTLS(t *testing.T) {
	ca := certstest.NewCA(t)
	server := ca.Leaf(t, "admin", certstest.LeafOptions{Names: []string{"127.0.0.1"}})
	client := ca.Leaf(t, "admin-client", certstest.LeafOptions{Client: true})
	plain := tlsPeer(t, &tls.Config{Certificates: []tls.Certificate{server.TLS}, MinVersion: tls.VersionTLS12})
	mtls := tlsPeer(t, &tls.Config{Certificates: []tls.Certificate{server.TLS}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	cluster := config.File{Store: config.Store{Etcd: config.EtcdStore{Endpoints: []string{"http://127.0.0.1:2379"}}}}

	if p, err := newPeerTLS(config.File{Instance: config.Instance{PeerCA: ca.CertFile}}); p != nil || err != nil || p.client() != nil {
		t.Fatalf("single node: %v, %v; want no peer client", p, err)
	}

	systemOnly, err := newPeerTLS(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(systemOnly, plain); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("system roots against a private CA: %v, want a certificate signed by unknown authority", err)
	}

	withCA := cluster
	withCA.Instance.PeerCA = ca.CertFile
	p, err := newPeerTLS(withCA)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(p, plain); err != nil {
		t.Fatalf("instance.peer_ca: %v", err)
	}

	// admin_tls with client_ca: the CA is trusted by default, and the
	// admin pair is presented.
	mutual := cluster
	mutual.AdminTLS = config.AdminTLS{Cert: client.CertFile, Key: client.KeyFile, ClientCA: ca.CertFile}
	m, err := newPeerTLS(mutual)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(m, mtls); err != nil {
		t.Fatalf("admin_tls.client_ca, the admin pair presented: %v", err)
	}
	if err := call(p, mtls); err == nil {
		t.Fatal("without admin_tls.client_ca no pair is presented, yet the mTLS peer took the call")
	}

	// A reload naming a file that cannot be read keeps the one in use.
	bad := withCA
	bad.Instance.PeerCA = filepath.Join(t.TempDir(), "missing.pem")
	if err := p.reload(bad); err == nil || !strings.Contains(err.Error(), "instance.peer_ca") || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("reload with a missing peer_ca: %v, want an error naming instance.peer_ca and the file", err)
	}
	if err := call(p, plain); err != nil {
		t.Fatalf("after a refused reload: %v, want the CA in use kept", err)
	}
	if _, err := newPeerTLS(bad); err == nil || !strings.Contains(err.Error(), "instance.peer_ca") {
		t.Fatalf("start with a missing peer_ca: %v, want an error naming instance.peer_ca", err)
	}
	badDefault := cluster
	badDefault.AdminTLS = config.AdminTLS{Cert: client.CertFile, Key: client.KeyFile, ClientCA: bad.Instance.PeerCA}
	if _, err := newPeerTLS(badDefault); err == nil || !strings.Contains(err.Error(), "admin_tls.client_ca") {
		t.Fatalf("start with a missing client_ca: %v, want an error naming admin_tls.client_ca", err)
	}
}
