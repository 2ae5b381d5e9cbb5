package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Every bad use of the embedded member's flags exits 2 before anything is
// bound, naming the flag (or key), the value and what is allowed.
func TestServeEmbeddedFlagErrors(t *testing.T) {
	t.Parallel()
	cfgFA := filepath.Join(t.TempDir(), "fa.yaml")
	if err := os.WriteFile(cfgFA, []byte("admin: 127.0.0.1:0\ninstance: {name: fa}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPeers := filepath.Join(t.TempDir(), "peers.yaml")
	if err := os.WriteFile(cfgPeers, []byte("admin: 127.0.0.1:0\ninstance: {name: fa}\nstore:\n  etcd:\n    embedded:\n      peers: [fa=http://127.0.0.1:2380]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"peers without --etcd-embedded", []string{"--etcd-peers", "fa=http://127.0.0.1:2380"},
			`serve: --etcd-peers: only with --etcd-embedded`},
		{"data without --etcd-embedded", []string{"--etcd-data", "/tmp/x"},
			`serve: --etcd-data: only with --etcd-embedded`},
		{"client without --etcd-embedded", []string{"--etcd-client", "http://127.0.0.1:2379"},
			`serve: --etcd-client: only with --etcd-embedded`},
		{"join without --etcd-embedded", []string{"--etcd-join"},
			`serve: --etcd-join: only with --etcd-embedded`},
		{"not name=URL", []string{"--etcd-embedded", "--etcd-peers", "fa=http://127.0.0.1:2380,http://127.0.0.2:2380"},
			`serve: --etcd-peers: invalid value "http://127.0.0.2:2380", must be name=http://host:port, the name an instance.name`},
		{"bad name", []string{"--etcd-embedded", "--etcd-peers", "f a=http://127.0.0.1:2380"},
			`serve: --etcd-peers: invalid value "f a=http://127.0.0.1:2380", must be name=http://host:port`},
		{"not http", []string{"--etcd-embedded", "--etcd-peers", "fa=grpc://127.0.0.1:2380"},
			`serve: --etcd-peers: invalid value "fa=grpc://127.0.0.1:2380", the URL of fa must be http://host:port (the embedded member serves plain HTTP; for TLS run an external etcd)`},
		{"duplicate name", []string{"--etcd-embedded", "--etcd-peers", "fa=http://127.0.0.1:2380,fa=http://127.0.0.2:2380"},
			`serve: --etcd-peers: invalid value "fa=http://127.0.0.2:2380", must name each member once (fa is listed as fa=http://127.0.0.1:2380 already)`},
		{"empty peers", []string{"--etcd-embedded", "--etcd-peers", ","},
			`serve: --etcd-peers: invalid value (missing), must list every member as name=http://host:port`},
		{"client a wildcard", []string{"--etcd-embedded", "--etcd-client", "http://0.0.0.0:2379"},
			`serve: --etcd-client: invalid value "http://0.0.0.0:2379", must have an IP address (not a wildcard) or localhost as host`},
		{"client a name", []string{"--etcd-embedded", "--etcd-client", "http://etcd.example:2379"},
			`serve: --etcd-client: invalid value "http://etcd.example:2379", must have an IP address (not a wildcard) or localhost as host`},
		{"empty data", []string{"--etcd-embedded", "--etcd-data", " "},
			`serve: --etcd-data: invalid value " ", must be a directory path`},
		{"own name missing", []string{"--config", cfgFA, "--etcd-embedded", "--etcd-peers", "fb=http://127.0.0.2:2380,fc=http://127.0.0.3:2380"},
			`serve: --etcd-peers: invalid value "fb=http://127.0.0.2:2380,fc=http://127.0.0.3:2380", must include this instance's name "fa" (instance.name) as fa=http://host:port`},
		{"own URL a host name", []string{"--config", cfgFA, "--etcd-embedded", "--etcd-peers", "fa=http://fa.example:2380"},
			`serve: --etcd-peers: invalid value "fa=http://fa.example:2380", this instance's peer URL must have an IP address (not a wildcard) or localhost as host: the member listens on it`},
		{"no peers anywhere", []string{"--config", cfgFA, "--etcd-embedded"},
			`serve: --etcd-peers (or store.etcd.embedded.peers): missing, the embedded etcd member needs every member as name=http://host:port, this instance's name "fa" among them`},
		{"client URL is the file's peer URL", []string{"--config", cfgPeers, "--etcd-embedded", "--etcd-client", "http://127.0.0.1:2380"},
			`serve: store.etcd.embedded.client_url (or --etcd-client): invalid value "http://127.0.0.1:2380", must differ from this instance's peer URL http://127.0.0.1:2380`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			root := NewRoot()
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs(append([]string{"serve"}, tc.args...))
			err := root.ExecuteContext(ctx)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Fatalf("err = %v, want exit 2", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err:\n got %v\nwant %s...", err, tc.want)
			}
		})
	}
}

// memberConfig turns store.etcd.embedded into etcd's configuration: the
// member named after the instance, its peer URL from the peers, the
// initial cluster, the data directory under data_dir by default, and a
// new cluster unless join is set.
func TestMemberConfig(t *testing.T) {
	t.Parallel()
	f := config.Default()
	f.DataDir = "/var/lib/fulcrum"
	f.Store.Etcd.Embedded = config.EtcdEmbedded{Peers: []string{"fa=http://10.0.0.1:2380", "fb=http://fb.example:2380"}}
	ec, err := memberConfig(f, "fa", peersKey)
	if err != nil {
		t.Fatal(err)
	}
	if ec.Name != "fa" || ec.Dir != "/var/lib/fulcrum/etcd" || ec.InitialCluster != "fa=http://10.0.0.1:2380,fb=http://fb.example:2380" || ec.ClusterState != embed.ClusterStateFlagNew {
		t.Errorf("name %q dir %q initial cluster %q state %q", ec.Name, ec.Dir, ec.InitialCluster, ec.ClusterState)
	}
	if got := ec.ListenPeerUrls[0].String() + " " + ec.AdvertisePeerUrls[0].String(); got != "http://10.0.0.1:2380 http://10.0.0.1:2380" {
		t.Errorf("peer URLs %s", got)
	}
	if got := ec.ListenClientUrls[0].String() + " " + ec.AdvertiseClientUrls[0].String(); got != "http://127.0.0.1:2379 http://127.0.0.1:2379" {
		t.Errorf("client URLs %s", got)
	}
	f.Store.Etcd.Embedded.Join = true
	f.Store.Etcd.Embedded.DataDir = "/srv/etcd"
	f.Store.Etcd.Embedded.ClientURL = "http://10.0.0.1:2379"
	if ec, err = memberConfig(f, "fa", peersKey); err != nil {
		t.Fatal(err)
	}
	if ec.ClusterState != embed.ClusterStateFlagExisting || ec.Dir != "/srv/etcd" || ec.ListenClientUrls[0].String() != "http://10.0.0.1:2379" {
		t.Errorf("with join, data_dir and client_url: state %q dir %q client %s", ec.ClusterState, ec.Dir, ec.ListenClientUrls[0].String())
	}
	if _, err := memberConfig(f, "fb", peersKey); err == nil || !strings.Contains(err.Error(), `store.etcd.embedded.peers[1]: invalid value "fb=http://fb.example:2380", this instance's peer URL must have an IP address`) {
		t.Errorf("as fb (a host name): %v", err)
	}
}

// A member whose peers do not come up gives up after start_timeout, with
// an error naming the peers and the quorum, and leaves nothing running.
func TestEmbeddedEtcdStartTimeout(t *testing.T) {
	t.Parallel()
	f := config.Default()
	f.DataDir = t.TempDir()
	f.Instance.Name = "fa"
	f.Store.Etcd.Embedded = config.EtcdEmbedded{
		Peers:        []string{"fa=http://" + freeLoopback(t), "fb=http://127.0.0.1:1", "fc=http://127.0.0.1:2"},
		ClientURL:    "http://" + freeLoopback(t),
		StartTimeout: protocol.Duration(time.Second),
	}
	start := time.Now()
	_, m, err := startEmbeddedEtcd(context.Background(), f, nil, slog.New(slog.DiscardHandler))
	took := time.Since(start)
	if m != nil || err == nil {
		t.Fatalf("member %v, err %v; want none and an error", m, err)
	}
	want := `serve: embedded etcd member "fa" not ready within start_timeout 1s: no quorum with its peers ` + strings.Join(f.Store.Etcd.Embedded.Peers, ",") + ` (2 of 3 must run and reach each other's peer URLs)`
	if err.Error() != want {
		t.Errorf("err:\n got %v\nwant %s", err, want)
	}
	if took < time.Second || took > 15*time.Second {
		t.Errorf("gave up after %v, want after start_timeout 1s and promptly", took)
	}
}

// A single-member cluster starts, the store's endpoints default to its
// client URL, and it closes.
func TestEmbeddedEtcdSingleMember(t *testing.T) {
	t.Parallel()
	f := config.Default()
	f.DataDir = t.TempDir()
	f.Instance.Name = "solo"
	client := "http://" + freeLoopback(t)
	f.Store.Etcd.Embedded = config.EtcdEmbedded{Peers: []string{"solo=http://" + freeLoopback(t)}, ClientURL: client}
	var logs bytes.Buffer
	cfg, m, err := startEmbeddedEtcd(context.Background(), f, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Store.Etcd.Endpoints; len(got) != 1 || got[0] != client {
		t.Errorf("store endpoints %v, want the member's client URL %s", got, client)
	}
	if _, err := os.Stat(filepath.Join(f.DataDir, "etcd", "member", "wal")); err != nil {
		t.Errorf("no member data under data_dir/etcd: %v", err)
	}
	m.close()
	if out := logs.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, `msg="embedded etcd member closed"`) {
		t.Errorf("logs:\n%s", out)
	}
}

// freeLoopback is a free port on 127.0.0.1, as host:port.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// etcd's zap entries reach slog from warn up, with their fields; those
// about fulcrum's deliberate settings, and all once the member is
// closing, at debug level.
func TestZapToSlog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	closing := new(atomic.Bool)
	lg := zap.New(newZapToSlog(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), closing)).With(zap.String("member", "fa"))
	lg.Info("an info line")
	lg.Warn("peer became inactive", zap.String("peer-id", "ab12"), zap.Error(errors.New("dial failed")))
	lg.Error("an error", zap.Int("n", 3))
	lg.Warn("simple token is not cryptographically signed")
	closing.Store(true)
	lg.Error("setting up serving from embedded etcd failed.")
	got := buf.String()
	for _, want := range []string{
		`level=WARN msg="peer became inactive" member=fa peer-id=ab12 error="dial failed"`,
		`level=ERROR msg="an error" member=fa n=3`,
		`level=DEBUG msg="simple token is not cryptographically signed" member=fa`,
		`level=DEBUG msg="setting up serving from embedded etcd failed." member=fa`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "an info line") {
		t.Errorf("etcd's info line was written:\n%s", got)
	}
}

// A member joining a running cluster first asks the other peers for their
// version and refuses a cluster older than 3.6 (a 3.7 member would panic
// in a 3.4 cluster), naming the peer and its version; a peer that does
// not answer is left to etcd.
func TestCheckJoinVersion(t *testing.T) {
	t.Parallel()
	peer := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/version" {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	old := peer(`{"etcdserver":"3.4.23","etcdcluster":"3.4.0"}`)
	cur := peer(`{"etcdserver":"3.7.3","etcdcluster":"3.7.0"}`)
	prev := peer(`{"etcdserver":"3.6.16","etcdcluster":"3.6.0"}`)
	junk := peer(`not json`)
	dead := "http://" + freeLoopback(t)
	self := config.EtcdPeer{Name: "fa", URL: "http://127.0.0.1:1"}
	ctx := context.Background()
	err := checkJoinVersion(ctx, []config.EtcdPeer{self, {Name: "fb", URL: cur}, {Name: "old", URL: old}}, "fa")
	want := `serve: store.etcd.embedded.join (--etcd-join): member old (` + old + `) runs etcd 3.4.23, cluster version 3.4.0: the embedded etcd member (3.7) joins only clusters of version 3.6 or later`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("with a 3.4 peer: %v, want %s...", err, want)
	}
	if err := checkJoinVersion(ctx, []config.EtcdPeer{self, {Name: "fb", URL: cur}, {Name: "fc", URL: prev}, {Name: "fd", URL: junk}, {Name: "fe", URL: dead}}, "fa"); err != nil {
		t.Errorf("with 3.7, 3.6, junk and dead peers: %v", err)
	}
}

// Without store.etcd.endpoints, the store (and fulcrum migrate) talks to
// the embedded member's client URL; endpoints given win.
func TestEtcdStoreOptionsEmbedded(t *testing.T) {
	t.Parallel()
	e := config.EtcdStore{Embedded: config.EtcdEmbedded{Peers: []string{"fa=http://127.0.0.1:2380"}}}
	if got := etcdStoreOptions(e).Endpoints; len(got) != 1 || got[0] != config.DefaultEtcdClientURL {
		t.Errorf("endpoints %v, want the default client URL", got)
	}
	e.Embedded.ClientURL = "http://10.0.0.1:2479"
	if got := etcdStoreOptions(e).Endpoints; len(got) != 1 || got[0] != "http://10.0.0.1:2479" {
		t.Errorf("endpoints %v, want client_url", got)
	}
	e.Endpoints = []string{"http://10.0.0.2:2379"}
	if got := etcdStoreOptions(e).Endpoints; len(got) != 1 || got[0] != "http://10.0.0.2:2379" {
		t.Errorf("endpoints %v, want store.etcd.endpoints", got)
	}
}
