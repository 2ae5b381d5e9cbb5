package balancer_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tlsGet GETs url trusting ca and returns the answer's body and the serial
// of the certificate served (on a new connection).
func tlsGet(t *testing.T, ca *certstest.CA, url string) (string, int64) {
	t.Helper()
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	a := make([]byte, 64)
	n, _ := res.Body.Read(a)
	return string(a[:n]), res.TLS.PeerCertificates[0].SerialNumber.Int64()
}

// A group with tls terminates it on its front door, advertises https://,
// exports its certificate's expiry, reloads rotated files on
// ReloadCertificates, refuses a mismatched pair without touching what it
// serves, and turns TLS off in place.
func TestTLSGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ca := certstest.NewCA(t)
	first := ca.Leaf(t, "web", certstest.LeafOptions{})
	rep := newReplica(t, named("r1"))
	gs := protocol.Group{Name: "web", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, TLS: protocol.FrontDoorTLS{Cert: first.CertFile, Key: first.KeyFile},
		Replicas: []protocol.StaticReplica{{Address: rep.URL}}}
	st := e.mustPutGroup(gs)
	if !strings.HasPrefix(st.Advertise, "https://127.0.0.1:") {
		t.Fatalf("advertise %q, want https://", st.Advertise)
	}
	url := st.Advertise + "/"
	if body, serial := tlsGet(t, ca, url); body != "r1" || serial != first.Cert.SerialNumber.Int64() {
		t.Fatalf("got %q from serial %d", body, serial)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(e.b.CertificateMetrics())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 || mfs[0].GetMetric()[0].GetGauge().GetValue() != float64(first.Cert.NotAfter.Unix()) {
		t.Errorf("metrics %v, %v; want the certificate's NotAfter", mfs, err)
	}

	second := ca.Leaf(t, "web", certstest.LeafOptions{})
	if err := e.b.ReloadCertificates(); err != nil {
		t.Fatal(err)
	}
	if _, serial := tlsGet(t, ca, url); serial != second.Cert.SerialNumber.Int64() {
		t.Errorf("after ReloadCertificates: serial %d, want %d", serial, second.Cert.SerialNumber.Int64())
	}

	other := ca.Leaf(t, "other", certstest.LeafOptions{})
	bad := gs
	bad.TLS = protocol.FrontDoorTLS{Cert: other.CertFile, Key: first.KeyFile}
	_, _, err = e.b.PutGroup(bad)
	var fe *protocol.FieldError
	if !errors.As(err, &fe) || fe.Field != "tls" || !strings.Contains(err.Error(), other.CertFile) {
		t.Fatalf("a mismatched pair: %v, want a FieldError on tls naming %s", err, other.CertFile)
	}
	if _, serial := tlsGet(t, ca, url); serial != second.Cert.SerialNumber.Int64() {
		t.Errorf("after a refused change: serial %d, want the one served before", serial)
	}

	plain := gs
	plain.TLS = protocol.FrontDoorTLS{}
	st = e.mustPutGroup(plain)
	if got := get(t, httpClient(t), strings.Replace(url, "https://", "http://", 1)); got.body != "r1" {
		t.Errorf("after tls was removed: %d %q", got.status, got.body)
	}
	if !strings.HasPrefix(st.Advertise, "http://") {
		t.Errorf("advertise %q after tls was removed", st.Advertise)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("metrics of a certificate no longer served: %v", mfs)
	}
}

// The balancer polls the certificate files every certs.PollInterval on
// its clock: rotated files are served after the next tick, with no
// SIGHUP.
func TestTLSCertificatesPolled(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	e := newEnv(t, envOptions{ticking: clk})
	ca := certstest.NewCA(t)
	first := ca.Leaf(t, "web", certstest.LeafOptions{})
	rep := newReplica(t, named("r1"))
	st := e.mustPutGroup(protocol.Group{Name: "web", Binding: protocol.PerRequest, TLS: protocol.FrontDoorTLS{Cert: first.CertFile, Key: first.KeyFile},
		Replicas: []protocol.StaticReplica{{Address: rep.URL}}})
	url := st.Advertise + "/"
	if _, serial := tlsGet(t, ca, url); serial != first.Cert.SerialNumber.Int64() {
		t.Fatalf("serial %d, want the first certificate's", serial)
	}
	second := ca.Leaf(t, "web", certstest.LeafOptions{})
	if _, serial := tlsGet(t, ca, url); serial != first.Cert.SerialNumber.Int64() {
		t.Fatalf("the rotated certificate was served before any poll (serial %d)", serial)
	}
	clk.Advance(certs.PollInterval)
	eventually(t, 10*time.Second, func() error {
		if _, serial := tlsGet(t, ca, url); serial != second.Cert.SerialNumber.Int64() {
			return fmt.Errorf("serial %d after the poll's tick, want %d", serial, second.Cert.SerialNumber.Int64())
		}
		return nil
	})
}
