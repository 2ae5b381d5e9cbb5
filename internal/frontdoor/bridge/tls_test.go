package bridge

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestTLSTermination: with Options.TLS the bridge serves HTTP/1.1 and h2
// (by ALPN) over TLS, and SetTLS(nil) makes new connections plain.
func TestTLSTermination(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	pair := ca.Leaf(t, "bridge", certstest.LeafOptions{})
	set, err := certs.NewServerSet(certs.ServerConfig{Cert: pair.CertFile, Key: pair.KeyFile, ALPN: httpdoor.ALPN}, certs.ServerOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envConfig{replicas: 1, replicated: protocol.Replicated{ReadOnly: []string{"GET /value"}},
		opts: Options{TLS: set.TLSConfig()}})
	if !e.srv.TLS() {
		t.Fatal("TLS() is false with Options.TLS set")
	}
	tlsURL := strings.Replace(e.url, "http://", "https://", 1)
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: h2}
		t.Cleanup(tr.CloseIdleConnections)
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tlsURL+"/value", nil)
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			cancel()
			t.Fatalf("h2=%v: %v", h2, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		wantProto := "HTTP/1.1"
		if h2 {
			wantProto = "HTTP/2.0"
		}
		if res.StatusCode != http.StatusOK || res.Proto != wantProto || !strings.Contains(string(body), `"value":0`) {
			t.Fatalf("h2=%v: %s %d %s, want %s 200 with the counter's value", h2, res.Proto, res.StatusCode, body, wantProto)
		}
	}

	e.srv.SetTLS(nil)
	if a := e.do(t, e.client(t), http.MethodGet, "/value", nil, nil); a.status != http.StatusOK {
		t.Fatalf("plain after SetTLS(nil): %d %s", a.status, a.body)
	}
}

// TestReadOnlyCallIsProxiedAndLogged: a call matching a read_only pattern
// goes to a replica, not to the log; it is observed and access-logged with
// the replica. A call matching no pattern (same path, other method) is
// not read-only.
func TestReadOnlyCallIsProxiedAndLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{replicas: 2, replicated: protocol.Replicated{ReadOnly: []string{"GET /value", "GET /healthz"}}})
	c := e.client(t)
	seen := map[string]bool{}
	for range 4 {
		a := e.do(t, c, http.MethodGet, "/value", nil, nil)
		if a.status != http.StatusOK || a.value(t) != 0 {
			t.Fatalf("GET /value: %d %s", a.status, a.body)
		}
		if a.header.Get(protocol.HeaderPosition) != "" {
			t.Fatalf("a read-only answer carries %s: %q", protocol.HeaderPosition, a.header.Get(protocol.HeaderPosition))
		}
		seen[recvObserved(t, e)] = true
	}
	if !seen["r1"] || !seen["r2"] {
		t.Fatalf("read-only calls went to %v, want both replicas (round-robin, nothing written)", seen)
	}
	// HEAD matches a GET pattern.
	if a := e.do(t, c, http.MethodHead, "/value", nil, nil); a.status != http.StatusOK {
		t.Fatalf("HEAD /value: %d", a.status)
	}
	if pos := e.nextPosition(t, "after"); pos != 1 {
		t.Fatalf("next position %d after read-only calls only, want 1", pos)
	}
	log := e.acc.String()
	if !strings.Contains(log, `method=GET path="/value" proto=HTTP/1.1 status=200 replica=r`) {
		t.Fatalf("access log has no line for a read-only call with its replica:\n%s", log)
	}
}

func recvObserved(t *testing.T, e *env) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	select {
	case id := <-e.g.observed:
		return id
	case <-ctx.Done():
		t.Fatal("no call observed")
		return ""
	}
}
