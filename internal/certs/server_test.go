package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
)

// syncBuf is a log destination safe for concurrent writes; changed is
// signalled after each.
type syncBuf struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

// waitLine waits, bounded, until the log holds want.
func waitLine(t *testing.T, s *syncBuf, want string) {
	t.Helper()
	bound := time.After(10 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.changed:
		case <-bound:
			t.Fatalf("no %q logged:\n%s", want, s.String())
		}
	}
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newLog() (*slog.Logger, *syncBuf) {
	b := &syncBuf{changed: make(chan struct{}, 1)}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// serve runs a TLS listener on loopback with set's config, completing
// handshakes and closing; it returns its address.
func serve(t *testing.T, set *certs.ServerSet) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", set.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("x"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// handshake connects with conf and returns the serial of the server's
// certificate.
func handshake(t *testing.T, addr string, conf *tls.Config) (int64, error) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// With TLS 1.3 a refused client certificate shows at the first read.
	if _, err := c.Read(make([]byte, 1)); err != nil {
		return 0, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

func TestServerSetPicksBySNI(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	def := ca.Leaf(t, "default", certstest.LeafOptions{Names: []string{"localhost", "127.0.0.1"}})
	a := ca.Leaf(t, "a", certstest.LeafOptions{Names: []string{"a.example"}})
	b := ca.Leaf(t, "b", certstest.LeafOptions{Names: []string{"*.b.example"}})
	set, err := certs.NewServerSet(certs.ServerConfig{Listener: "t", Cert: def.CertFile, Key: def.KeyFile,
		Certs: []certs.PairFiles{{Cert: a.CertFile, Key: a.KeyFile}, {Cert: b.CertFile, Key: b.KeyFile}}}, certs.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, set)
	for _, tc := range []struct {
		sni  string
		want certstest.Pair
	}{{"a.example", a}, {"x.b.example", b}, {"localhost", def}, {"other.example", def}} {
		got, err := handshake(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: tc.sni, InsecureSkipVerify: tc.sni == "other.example"})
		if err != nil {
			t.Fatalf("sni %s: %v", tc.sni, err)
		}
		if got != tc.want.Cert.SerialNumber.Int64() {
			t.Errorf("sni %s: served serial %d, want %d", tc.sni, got, tc.want.Cert.SerialNumber.Int64())
		}
	}
}

func TestServerSetRefusesBadPairsAtStart(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	a := ca.Leaf(t, "a", certstest.LeafOptions{})
	b := ca.Leaf(t, "b", certstest.LeafOptions{})
	for _, tc := range []struct {
		name string
		cfg  certs.ServerConfig
		want string
	}{
		{"mismatched", certs.ServerConfig{Cert: a.CertFile, Key: b.KeyFile}, a.CertFile},
		{"missing key", certs.ServerConfig{Cert: a.CertFile, Key: a.KeyFile + ".missing"}, a.KeyFile + ".missing"},
		{"mismatched extra pair", certs.ServerConfig{Cert: a.CertFile, Key: a.KeyFile, Certs: []certs.PairFiles{{Cert: b.CertFile, Key: a.KeyFile}}}, b.CertFile},
		{"bad client CA", certs.ServerConfig{Cert: a.CertFile, Key: a.KeyFile, ClientCA: a.KeyFile}, a.KeyFile},
		{"min version", certs.ServerConfig{Cert: a.CertFile, Key: a.KeyFile, MinVersion: "1.1"}, "1.2, 1.3"},
	} {
		_, err := certs.NewServerSet(tc.cfg, certs.ServerOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func TestServerSetServesExpiredWithAnError(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	old := ca.Leaf(t, "old", certstest.LeafOptions{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	log, buf := newLog()
	set, err := certs.NewServerSet(certs.ServerConfig{Cert: old.CertFile, Key: old.KeyFile}, certs.ServerOptions{Logger: log})
	if err != nil {
		t.Fatalf("an expired certificate must be served: %v", err)
	}
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), old.CertFile) {
		t.Errorf("no error logged for the expired certificate: %q", buf.String())
	}
	got, err := handshake(t, serve(t, set), &tls.Config{InsecureSkipVerify: true})
	if err != nil || got != old.Cert.SerialNumber.Int64() {
		t.Errorf("served %d, %v; want the expired certificate", got, err)
	}
}

func TestServerSetRequiresClientCertificates(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	srv := ca.Leaf(t, "srv", certstest.LeafOptions{})
	cli := ca.Leaf(t, "cli", certstest.LeafOptions{Client: true})
	set, err := certs.NewServerSet(certs.ServerConfig{Cert: srv.CertFile, Key: srv.KeyFile, ClientCA: ca.CertFile}, certs.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, set)
	if _, err := handshake(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err == nil {
		t.Error("a client without a certificate was served")
	}
	other := certstest.NewCA(t).Leaf(t, "stranger", certstest.LeafOptions{Client: true})
	if _, err := handshake(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{other.TLS}}); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	if _, err := handshake(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cli.TLS}}); err != nil {
		t.Errorf("a client with a certificate of the CA: %v", err)
	}
}

func TestServerSetMinVersion(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	srv := ca.Leaf(t, "srv", certstest.LeafOptions{})
	set, err := certs.NewServerSet(certs.ServerConfig{Cert: srv.CertFile, Key: srv.KeyFile, MinVersion: "1.3"}, certs.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, set)
	if _, err := handshake(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("a TLS 1.2 client was served under min_version 1.3")
	}
	if _, err := handshake(t, addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err != nil {
		t.Errorf("a TLS 1.3 client: %v", err)
	}
}

// TestServerSetReloadsOnTick rotates the files: a half-written pair keeps
// the old certificate (logged once over several polls), the whole new pair
// is served to new handshakes at the next tick.
func TestServerSetReloadsOnTick(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	first := ca.Leaf(t, "srv", certstest.LeafOptions{})
	log, buf := newLog()
	clk := clocktest.New(time.Now())
	set, err := certs.NewServerSet(certs.ServerConfig{Listener: "group web", Cert: first.CertFile, Key: first.KeyFile}, certs.ServerOptions{Logger: log, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, set)
	conf := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}

	// A whole new pair, whose key is put back to the old one: half written.
	oldKey := readFile(t, first.KeyFile)
	second := ca.Leaf(t, "srv", certstest.LeafOptions{})
	newKey := readFile(t, second.KeyFile)
	writeFile(t, first.KeyFile, oldKey)
	for range 3 {
		if err := set.Reload(); err == nil {
			t.Fatal("a mismatched pair was reloaded without an error")
		}
	}
	if n := strings.Count(buf.String(), "certificate not reloaded"); n != 1 {
		t.Errorf("reason logged %d times over 3 polls, want once:\n%s", n, buf.String())
	}
	if got, err := handshake(t, addr, conf); err != nil || got != first.Cert.SerialNumber.Int64() {
		t.Fatalf("after a refused reload: serial %d, %v; want the first", got, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tk := clk.NewTicker(certs.PollInterval)
	go func() { defer close(done); set.Run(ctx, tk) }()
	writeFile(t, first.KeyFile, newKey)
	clk.Advance(certs.PollInterval)
	// The tick's reload logs the swap: wait for that line.
	waitLine(t, buf, "certificate reloaded")
	cancel()
	<-done
	if got, err := handshake(t, addr, conf); err != nil || got != second.Cert.SerialNumber.Int64() {
		t.Fatalf("after the tick: serial %d, %v; want the second certificate's %d", got, err, second.Cert.SerialNumber.Int64())
	}
	if !strings.Contains(buf.String(), "certificate reloaded") {
		t.Errorf("no reload logged:\n%s", buf.String())
	}
}

func TestCollectorExportsNotAfter(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	srv := ca.Leaf(t, "srv", certstest.LeafOptions{})
	set, err := certs.NewServerSet(certs.ServerConfig{Listener: "admin", Cert: srv.CertFile, Key: srv.KeyFile}, certs.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := certs.NewCollector()
	c.Add(set)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "fulcrum_tls_cert_not_after_timestamp_seconds" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v", mfs)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["listener"] != "admin" || labels["name"] != srv.CertFile {
		t.Errorf("labels %v, want listener=admin name=%s", labels, srv.CertFile)
	}
	if got, want := m.GetGauge().GetValue(), float64(srv.Cert.NotAfter.Unix()); got != want {
		t.Errorf("value %v, want %v", got, want)
	}
	c.Remove(set)
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Errorf("after Remove: %v, %v; want nothing", mfs, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
