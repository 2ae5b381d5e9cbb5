package balancer_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// tlsReplicaOptions shape an https:// replica.
type tlsReplicaOptions struct {
	// names are the names its certificate holds (localhost and 127.0.0.1
	// when empty).
	names []string
	// clientCA, when not nil, makes it require a client certificate the
	// CA signed.
	clientCA *certstest.CA
}

// tlsReplica is an HTTPS replica with a certificate of ca serving h; every
// request it serves is counted in seen, by the common name of the client
// certificate it came with ("-" for none).
type tlsReplica struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string]int
}

func newTLSReplica(t *testing.T, ca *certstest.CA, h http.Handler, o tlsReplicaOptions) *tlsReplica {
	t.Helper()
	leaf := ca.Leaf(t, fmt.Sprintf("replica-%d", time.Now().UnixNano()), certstest.LeafOptions{Names: o.names})
	r := &tlsReplica{seen: map[string]int{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name := "-"
		if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
			name = req.TLS.PeerCertificates[0].Subject.CommonName
		}
		r.mu.Lock()
		r.seen[name]++
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLS}}
	if o.clientCA != nil {
		r.srv.TLS.ClientCAs = o.clientCA.Pool()
		r.srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	}
	// Refused handshakes are what several tests are about: not noise.
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

// served is how many requests came with a client certificate named cn.
func (r *tlsReplica) served(cn string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[cn]
}

// logSink collects a balancer's log lines.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

var replicaTLSEngines = []string{httpdoor.EngineLean, httpdoor.EngineStdlib}

// TestReplicaTLSPerRequest proxies calls to an https:// replica (the Prime
// backend) on both HTTP engines: verified with replica_tls.ca, refused
// (502) without it, with a wrong server name or when the replica requires
// a client certificate the group does not present; accepted with
// insecure_skip_verify (and a warning), with server_name, and with the
// client certificate.
func TestReplicaTLSPerRequest(t *testing.T) {
	t.Parallel()
	for _, engine := range replicaTLSEngines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testReplicaTLSPerRequest(t, engine)
		})
	}
}

func testReplicaTLSPerRequest(t *testing.T, engine string) {
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	logs := &logSink{}
	e := newEnv(t, envOptions{engine: engine, logger: slog.New(slog.NewTextHandler(logs, nil))})
	c := httpClient(t)
	prime := backend.NewPrime(func() string { return "tls-replica" })
	plain := newTLSReplica(t, ca, prime, tlsReplicaOptions{})
	named := newTLSReplica(t, ca, prime, tlsReplicaOptions{names: []string{"replica.internal"}})
	mtls := newTLSReplica(t, ca, prime, tlsReplicaOptions{clientCA: clients})
	pair := clients.Leaf(t, "balancer", certstest.LeafOptions{Names: []string{"balancer"}, Client: true})

	// group puts group name with one replica and returns the answer to a
	// call through its front door.
	call := func(name, replica string, rtls protocol.ReplicaTLS) answer {
		t.Helper()
		st := e.mustPutGroup(protocol.Group{
			Name: name, Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName, ReplicaTLS: rtls,
			Replicas: []protocol.StaticReplica{{Address: replica}},
		})
		return get(t, c, st.Advertise+"/prime/7919")
	}
	wantPrime := func(what string, a answer) {
		t.Helper()
		var body struct {
			Prime    bool   `json:"prime"`
			ServedBy string `json:"served_by"`
		}
		if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &body) != nil || !body.Prime || body.ServedBy != "tls-replica" {
			t.Errorf("%s: %d %q, want 200 from the replica saying 7919 is prime", what, a.status, a.body)
		}
	}
	wantRefused := func(what string, a answer) {
		t.Helper()
		if a.status != http.StatusBadGateway {
			t.Errorf("%s: %d %q, want 502", what, a.status, a.body)
		}
	}

	wantRefused("system roots only", call("roots", plain.srv.URL, protocol.ReplicaTLS{}))
	if n := plain.served("-"); n != 0 {
		t.Fatalf("the replica served %d calls to a group that cannot verify it", n)
	}
	wantPrime("replica_tls.ca", call("roots", plain.srv.URL, protocol.ReplicaTLS{CA: ca.CertFile}))
	if n := plain.served("-"); n != 1 {
		t.Errorf("the replica served %d calls, want 1", n)
	}
	// Trusting another CA instead: the connection kept alive from the
	// call above is not used again.
	wantRefused("another CA", call("roots", plain.srv.URL, protocol.ReplicaTLS{CA: certstest.NewCA(t).CertFile}))
	if n := plain.served("-"); n != 1 {
		t.Errorf("the replica served %d calls after the group stopped trusting it, want 1", n)
	}

	if strings.Contains(logs.String(), "insecure_skip_verify") {
		t.Fatalf("warned of insecure_skip_verify before any group set it:\n%s", logs)
	}
	wantPrime("insecure_skip_verify", call("insecure", plain.srv.URL, protocol.ReplicaTLS{InsecureSkipVerify: true}))
	if !strings.Contains(logs.String(), "replica_tls.insecure_skip_verify is set") || !strings.Contains(logs.String(), "group=insecure") {
		t.Errorf("no warning naming the group for insecure_skip_verify; log:\n%s", logs)
	}

	wantRefused("certificate for another name", call("named", named.srv.URL, protocol.ReplicaTLS{CA: ca.CertFile}))
	wantPrime("replica_tls.server_name", call("named", named.srv.URL, protocol.ReplicaTLS{CA: ca.CertFile, ServerName: "replica.internal"}))

	wantRefused("mTLS without a client certificate", call("mtls", mtls.srv.URL, protocol.ReplicaTLS{CA: ca.CertFile}))
	wantPrime("mTLS", call("mtls", mtls.srv.URL, protocol.ReplicaTLS{CA: ca.CertFile, Cert: pair.CertFile, Key: pair.KeyFile}))
	if n := mtls.served("balancer"); n != 1 {
		t.Errorf("the mTLS replica served %d calls with the balancer's certificate, want 1", n)
	}
}

// TestReplicaTLSRefusesBadFiles: files that cannot be used are a field
// error naming the setting and the file, and the group is not changed.
func TestReplicaTLSRefusesBadFiles(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	pair := ca.Leaf(t, "client", certstest.LeafOptions{Client: true})
	other := ca.Leaf(t, "other", certstest.LeafOptions{Client: true})
	missing := t.TempDir() + "/missing.pem"
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "files", ReplicaTLS: protocol.ReplicaTLS{CA: ca.CertFile}})
	for _, tt := range []struct {
		name  string
		rtls  protocol.ReplicaTLS
		field string
		value string
	}{
		{"unreadable ca", protocol.ReplicaTLS{CA: missing}, "replica_tls.ca", missing},
		{"ca that is a key", protocol.ReplicaTLS{CA: pair.KeyFile}, "replica_tls.ca", pair.KeyFile},
		{"unreadable key", protocol.ReplicaTLS{Cert: pair.CertFile, Key: missing}, "replica_tls.key", missing},
		{"key of another certificate", protocol.ReplicaTLS{Cert: pair.CertFile, Key: other.KeyFile}, "replica_tls.cert", pair.CertFile},
		{"cert without key", protocol.ReplicaTLS{Cert: pair.CertFile}, "replica_tls.key", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := e.b.PutGroup(protocol.Group{Name: "files", FrontDoor: "127.0.0.1:0", ReplicaTLS: tt.rtls})
			var fe *protocol.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || fe.Value != tt.value || fe.Allowed == "" {
				t.Fatalf("PutGroup = %v, want a field error for %s = %q", err, tt.field, tt.value)
			}
			if got := e.mustGroup("files").ReplicaTLS; got != (protocol.ReplicaTLS{CA: ca.CertFile}) {
				t.Errorf("replica_tls after a refused change: %+v", got)
			}
		})
	}
}

// TestReplicaTLSHealthProbes: health probes of an https:// replica are made
// over TLS verified per replica_tls: without the CA the replica goes down,
// with it the replica comes back up.
func TestReplicaTLSHealthProbes(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	var probes atomic.Int64
	rep := newTLSReplica(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(protocol.HeaderProbe) != "" {
			probes.Add(1)
		}
		io.WriteString(w, "ok")
	}), tlsReplicaOptions{})
	e := newEnv(t, envOptions{})
	group := func(rtls protocol.ReplicaTLS) {
		e.mustPutGroup(protocol.Group{
			Name: "hp", ReportInterval: ms(20), ReplicaTLS: rtls,
			Health: protocol.Health{Path: "/healthz", Interval: ms(20), Timeout: ms(20), Rise: 1, Fall: 1},
		})
	}
	group(protocol.ReplicaTLS{})
	events := e.subscribe("hp")
	reg := e.mustRegister("hp", rep.srv.URL)
	waitEvent(t, events, 5*time.Second, membership(stateIs(reg.ID, protocol.StateDown)))
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d probes reached a replica the group cannot verify", n)
	}
	group(protocol.ReplicaTLS{CA: ca.CertFile})
	waitEvent(t, events, 5*time.Second, membership(stateIs(reg.ID, protocol.StateActive)))
	if probes.Load() == 0 {
		t.Error("the replica came up without a probe reaching it")
	}
}

// TestReplicaTLSPull: a replica's monitor is pulled over https:// with the
// group's replica_tls (here mTLS, the monitor requiring the balancer's
// client certificate).
func TestReplicaTLSPull(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	pair := clients.Leaf(t, "puller", certstest.LeafOptions{Names: []string{"puller"}, Client: true})
	mon := newTLSReplica(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"load": 7, "metrics": {"rps": 7, "inflight": 1}}`)
	}), tlsReplicaOptions{clientCA: clients})
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "tpull", ReportInterval: ms(20), ReplicaTLS: protocol.ReplicaTLS{CA: ca.CertFile, Cert: pair.CertFile, Key: pair.KeyFile}})
	reg := e.mustRegisterWith("tpull", protocol.Registration{
		Address: mon.srv.URL,
		Monitor: protocol.MonitorSpec{Mode: protocol.MonitorPull, URL: mon.srv.URL + "/fulcrum/report"},
	})
	eventually(t, 5*time.Second, func() error {
		r := replicaOf(t, e.mustGroup("tpull"), reg.ID)
		if r.Load == nil || *r.Load != 7 {
			return fmt.Errorf("replica %+v, want load 7 from its pulled monitor", r)
		}
		return nil
	})
	if mon.served("puller") == 0 {
		t.Error("the monitor was not pulled with the balancer's client certificate")
	}
}

// TestReplicaTLSRedirects: on-demand and per-session front doors redirect
// to an https:// replica, and curl --cacert and the Go client (client.Options.Base
// with the CA) follow the redirect to it.
func TestReplicaTLSRedirects(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is needed: %v", err)
		}
		t.Skip("curl not installed")
	}
	ca := certstest.NewCA(t)
	rep := newTLSReplica(t, ca, named("secure"), tlsReplicaOptions{})
	e := newEnv(t, envOptions{})
	for _, binding := range []string{protocol.OnDemand, protocol.PerSession} {
		t.Run(binding, func(t *testing.T) {
			st := e.mustPutGroup(protocol.Group{Name: "r-" + binding, Binding: binding, ReplicaTLS: protocol.ReplicaTLS{CA: ca.CertFile}})
			e.mustRegister(st.Name, rep.srv.URL)

			a := get(t, httpClient(t), st.Advertise+"/hello?x=1")
			if a.status != http.StatusTemporaryRedirect || a.header.Get("Location") != rep.srv.URL+"/hello?x=1" {
				t.Fatalf("front door answered %d Location %q, want 307 to %s/hello?x=1", a.status, a.header.Get("Location"), rep.srv.URL)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, curl, "-sS", "-L", "--fail", "--cacert", ca.CertFile, st.Advertise+"/hello").CombinedOutput()
			if err != nil || string(out) != "secure" {
				t.Errorf("curl -L --cacert: %q, %v; want secure", out, err)
			}
			out, err = exec.CommandContext(ctx, curl, "-sS", "-L", "--fail", st.Advertise+"/hello").CombinedOutput()
			if err == nil {
				t.Errorf("curl without --cacert followed to the replica: %q", out)
			}

			base := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
			defer base.CloseIdleConnections()
			hc := client.NewHTTPClient(client.Options{Base: base, Timeout: 10 * time.Second, Logger: quiet})
			res, err := hc.Get(st.Advertise + "/hello")
			if err != nil {
				t.Fatalf("Go client: %v", err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || string(body) != "secure" {
				t.Errorf("Go client: %d %q, want 200 secure", res.StatusCode, body)
			}
		})
	}
}

// TestReplicaTLSStrategyProbes: a probing strategy (prequal) probes its
// https:// replicas over TLS verified with replica_tls.
func TestReplicaTLSStrategyProbes(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	rp := &probedReplica{}
	rep := newTLSReplica(t, ca, rp, tlsReplicaOptions{})
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{
		Name: "tpq", Binding: protocol.PerRequest, Strategy: strategy.PrequalName,
		Params: map[string]any{"probe_timeout": "1s"}, ReplicaTLS: protocol.ReplicaTLS{CA: ca.CertFile},
	})
	e.mustRegister("tpq", rep.srv.URL)
	eventually(t, 10*time.Second, func() error {
		if rp.probes.Load() == 0 {
			return errors.New("no load probe reached the https:// replica")
		}
		return nil
	})
}

// TestReplicaTLSReload: ReloadReplicaTLS reads a rotated client
// certificate pair, which the next connection to a replica presents; a
// pair that cannot be read is an error naming the group and the pair in
// use stays.
func TestReplicaTLSReload(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	clients := certstest.NewCA(t)
	// Every answer closes its connection: each call dials, and so shows
	// the pair in use.
	rep := newTLSReplica(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	}), tlsReplicaOptions{clientCA: clients})
	pair := clients.Leaf(t, "balancer", certstest.LeafOptions{Names: []string{"first"}, Client: true})
	e := newEnv(t, envOptions{})
	st := e.mustPutGroup(protocol.Group{
		Name: "rot", Binding: protocol.PerRequest, ReplicaTLS: protocol.ReplicaTLS{CA: ca.CertFile, Cert: pair.CertFile, Key: pair.KeyFile},
		Replicas: []protocol.StaticReplica{{Address: rep.srv.URL}},
	})
	c := httpClient(t)
	callAs := func(cn string) {
		t.Helper()
		before := rep.served(cn)
		if a := get(t, c, st.Advertise+"/"); a.status != http.StatusOK {
			t.Fatalf("call: %d %q", a.status, a.body)
		}
		if rep.served(cn) != before+1 {
			t.Fatalf("the call did not come with the certificate of %s", cn)
		}
	}
	callAs("first")
	clients.Leaf(t, "balancer", certstest.LeafOptions{Names: []string{"second"}, Client: true})
	callAs("first") // read at the group's creation; not yet reloaded
	if err := e.b.ReloadReplicaTLS(); err != nil {
		t.Fatal(err)
	}
	callAs("second")

	if err := os.WriteFile(pair.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.b.ReloadReplicaTLS(); err == nil || !strings.Contains(err.Error(), "group rot") {
		t.Fatalf("ReloadReplicaTLS with a broken key: %v, want an error naming group rot", err)
	}
	callAs("second")
}

// TestReplicaTLSPersists: an API group's replica_tls is stored with it and
// in use again after a restart.
func TestReplicaTLSPersists(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t)
	rep := newTLSReplica(t, ca, named("kept"), tlsReplicaOptions{})
	e := newEnv(t, envOptions{})
	want := protocol.ReplicaTLS{CA: ca.CertFile, ServerName: "localhost"}
	e.mustPutGroup(protocol.Group{Name: "kept", Binding: protocol.PerRequest, ReplicaTLS: want, Replicas: []protocol.StaticReplica{{Address: rep.srv.URL}}})
	e = e.reopen(envOptions{})
	st := e.mustGroup("kept")
	if st.ReplicaTLS != want {
		t.Fatalf("replica_tls after a restart: %+v, want %+v", st.ReplicaTLS, want)
	}
	if a := get(t, httpClient(t), st.Advertise+"/"); a.status != http.StatusOK || a.body != "kept" {
		t.Errorf("call after a restart: %d %q, want 200 kept", a.status, a.body)
	}
}
