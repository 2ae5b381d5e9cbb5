package httpdoor

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tlsSeen is what an https:// member saw of a call.
type tlsSeen struct {
	Proto  string `json:"proto"`
	ALPN   string `json:"alpn"`
	Client string `json:"client"`
}

// startTLSReplica is a member at https://127.0.0.1:port with a certificate
// of ca that requires a client certificate of clientCA, serving HTTP/1.1
// and h2 (ALPN); it answers what it saw of each call.
func startTLSReplica(t *testing.T, ca, clientCA *certstest.CA) string {
	t.Helper()
	leaf := ca.Leaf(t, "member", certstest.LeafOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			s := tlsSeen{Proto: r.Proto, ALPN: r.TLS.NegotiatedProtocol}
			if len(r.TLS.PeerCertificates) > 0 {
				s.Client = r.TLS.PeerCertificates[0].Subject.CommonName
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(s)
		}),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{leaf.TLS},
			ClientCAs:    clientCA.Pool(),
			ClientAuth:   tls.RequireAndVerifyClientCert,
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String()
}

// testProxyHTTPSMember proxies to an https:// member with the client
// Options.ReplicaTLS gives: HTTP/1.1 calls over TLS negotiated as
// http/1.1, gRPC calls over h2 (ALPN), both presenting the client
// certificate; without ReplicaTLS (the system roots) the member is refused
// and the call answered 502.
func testProxyHTTPSMember(t *testing.T, engine string) {
	t.Parallel()
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	pair := clients.Leaf(t, "frontdoor", certstest.LeafOptions{Names: []string{"frontdoor"}, Client: true})
	member := startTLSReplica(t, ca, clients)
	rtls, err := certs.NewClient(certs.ClientFiles{CA: ca.CertFile, Cert: pair.CertFile, Key: pair.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGroup(groupConfig{binding: protocol.PerRequest, members: []spec{{id: "m", url: member}}})
	fd := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger(), ReplicaTLS: func() *certs.Client { return rtls }})

	for _, tc := range []struct {
		name   string
		c      *http.Client
		hdr    []string
		proto  string
		alpn   string
		method string
	}{
		{"HTTP/1.1", h1Client(t), nil, "HTTP/1.1", "http/1.1", "GET"},
		{"gRPC", h2cClient(t), []string{"Content-Type", "application/grpc", "TE", "trailers"}, "HTTP/2.0", "h2", "POST"},
	} {
		res, body := do(t, tc.c, tc.method, fd.url+"/svc", "x", tc.hdr...)
		var s tlsSeen
		if err := json.Unmarshal(body, &s); res.StatusCode != 200 || err != nil {
			t.Fatalf("%s: %d %q", tc.name, res.StatusCode, body)
		}
		if s != (tlsSeen{Proto: tc.proto, ALPN: tc.alpn, Client: "frontdoor"}) {
			t.Errorf("%s: the member saw %+v, want %s over TLS (%s) with the client certificate", tc.name, s, tc.proto, tc.alpn)
		}
	}

	roots := startFrontDoor(t, g, Options{Engine: engine, Logger: quietLogger()})
	if res, body := do(t, h1Client(t), "GET", roots.url+"/svc", ""); res.StatusCode != http.StatusBadGateway {
		t.Errorf("without ReplicaTLS: %d %q, want 502", res.StatusCode, body)
	}
}
