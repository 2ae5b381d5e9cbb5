package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// store.etcd.embedded parses; it makes store.etcd set without endpoints,
// and its defaults fill what is unset.
func TestParseStoreEtcdEmbedded(t *testing.T) {
	t.Parallel()
	in := "data_dir: /var/lib/fulcrum\ninstance: {name: fa}\nstore:\n  etcd:\n    embedded:\n" +
		"      peers: [fa=http://10.0.0.1:2380, fb=http://fb.example:2380, fc=http://10.0.0.3:2380]\n"
	f, err := Parse("fulcrum.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Store.Etcd.Enabled() || !f.Store.Etcd.Embedded.Enabled() {
		t.Fatalf("store.etcd enabled %v, embedded enabled %v; want both", f.Store.Etcd.Enabled(), f.Store.Etcd.Embedded.Enabled())
	}
	want := EtcdEmbedded{
		Peers:   []string{"fa=http://10.0.0.1:2380", "fb=http://fb.example:2380", "fc=http://10.0.0.3:2380"},
		DataDir: "/var/lib/fulcrum/etcd", ClientURL: "http://127.0.0.1:2379", StartTimeout: protocol.Duration(time.Minute),
	}
	if got := f.Store.Etcd.Embedded.WithDefaults(f.DataDir); !reflect.DeepEqual(got, want) {
		t.Errorf("store.etcd.embedded = %+v, want %+v", got, want)
	}
	full := "instance: {name: fa}\nstore:\n  etcd:\n    embedded:\n      peers: [fa=http://127.0.0.1:2380]\n" +
		"      data_dir: /srv/etcd\n      client_url: http://127.0.0.1:2479\n      join: true\n      start_timeout: 10s\n"
	f, err = Parse("fulcrum.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	want = EtcdEmbedded{Peers: []string{"fa=http://127.0.0.1:2380"}, DataDir: "/srv/etcd", ClientURL: "http://127.0.0.1:2479", Join: true, StartTimeout: protocol.Duration(10 * time.Second)}
	if got := f.Store.Etcd.Embedded.WithDefaults(f.DataDir); !reflect.DeepEqual(got, want) {
		t.Errorf("store.etcd.embedded = %+v, want %+v", got, want)
	}
	// Without peers in the file (--etcd-peers gives them; serve refuses
	// to start with none).
	f, err = Parse("fulcrum.yaml", []byte("store:\n  etcd:\n    embedded: {start_timeout: 2m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Store.Etcd.Enabled() || f.Store.Etcd.Embedded.StartTimeout != protocol.Duration(2*time.Minute) {
		t.Errorf("store.etcd.embedded without peers: %+v", f.Store.Etcd)
	}
}

// Every problem of store.etcd.embedded is reported with its line, key,
// value and what is allowed.
func TestParseStoreEtcdEmbeddedBad(t *testing.T) {
	t.Parallel()
	head := "instance: {name: fa}\nstore:\n  etcd:\n    embedded:\n" // lines 1-4
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"not name=URL",
			head + "      peers: [fa=http://127.0.0.1:2380, 'http://10.0.0.2:2380', '-x=http://10.0.0.3:2380']\n",
			[]string{
				`fulcrum.yaml:5: store.etcd.embedded.peers[1]: invalid value "http://10.0.0.2:2380", must be name=http://host:port, the name an instance.name`,
				`fulcrum.yaml:5: store.etcd.embedded.peers[2]: invalid value "-x=http://10.0.0.3:2380", must be name=http://host:port`,
			}},
		{"not http",
			head + "      peers: [fa=http://127.0.0.1:2380, fb=https://10.0.0.2:2380, fc=10.0.0.3:2380, fd=http://10.0.0.4]\n",
			[]string{
				`store.etcd.embedded.peers[1]: invalid value "fb=https://10.0.0.2:2380", the URL of fb must be http://host:port (the embedded member serves plain HTTP; for TLS run an external etcd)`,
				`store.etcd.embedded.peers[2]: invalid value "fc=10.0.0.3:2380", the URL of fc must be http://host:port`,
				`store.etcd.embedded.peers[3]: invalid value "fd=http://10.0.0.4", the URL of fd must be http://host:port`,
			}},
		{"duplicate name",
			head + "      peers: [fa=http://127.0.0.1:2380, fb=http://10.0.0.2:2380, fb=http://10.0.0.3:2380]\n",
			[]string{`store.etcd.embedded.peers[2]: invalid value "fb=http://10.0.0.3:2380", must name each member once (fb is listed as fb=http://10.0.0.2:2380 already)`}},
		{"duplicate URL",
			head + "      peers: [fa=http://127.0.0.1:2380, fb=http://10.0.0.2:2380, fc=http://10.0.0.2:2380]\n",
			[]string{`store.etcd.embedded.peers[2]: invalid value "fc=http://10.0.0.2:2380", must give each member a peer URL of its own (http://10.0.0.2:2380 is fb's already)`}},
		{"own name missing",
			head + "      peers: [fb=http://10.0.0.2:2380, fc=http://10.0.0.3:2380]\n",
			[]string{`fulcrum.yaml:5: store.etcd.embedded.peers: invalid value (a list), must include this instance's name "fa" (instance.name) as fa=http://host:port`}},
		{"own URL a host name",
			head + "      peers: [fa=http://fa.example:2380, fb=http://fb.example:2380]\n",
			[]string{`store.etcd.embedded.peers[0]: invalid value "fa=http://fa.example:2380", this instance's peer URL must have an IP address (not a wildcard) or localhost as host: the member listens on it`}},
		{"own URL a wildcard",
			head + "      peers: [fa=http://0.0.0.0:2380]\n",
			[]string{`store.etcd.embedded.peers[0]: invalid value "fa=http://0.0.0.0:2380", this instance's peer URL must have an IP address (not a wildcard)`}},
		{"every other key",
			head + "      peers: [fa=http://127.0.0.1:2380]\n      data_dir: \"a\\x01b\"\n      client_url: http://[::]:2379\n      start_timeout: 500ms\n",
			[]string{
				`fulcrum.yaml:6: store.etcd.embedded.data_dir: invalid value "a\x01b", must be a directory path of at most 4096 characters, without control characters`,
				`fulcrum.yaml:7: store.etcd.embedded.client_url: invalid value "http://[::]:2379", must have an IP address (not a wildcard) or localhost as host`,
				`fulcrum.yaml:8: store.etcd.embedded.start_timeout: invalid value "500ms", must be a duration in [1s, 1h]`,
			}},
		{"client URL not http",
			head + "      peers: [fa=http://127.0.0.1:2380]\n      client_url: unix:///run/etcd.sock\n",
			[]string{`store.etcd.embedded.client_url: invalid value "unix:///run/etcd.sock", must be http://host:port`}},
		{"client URL the peer URL",
			head + "      peers: [fa=http://127.0.0.1:2380]\n      client_url: http://127.0.0.1:2380\n",
			[]string{`store.etcd.embedded.client_url: invalid value "http://127.0.0.1:2380", must differ from this instance's peer URL http://127.0.0.1:2380 (the member listens on both)`}},
		{"unknown key",
			head + "      peers: [fa=http://127.0.0.1:2380]\n      name: fa\n",
			[]string{`fulcrum.yaml:6: store.etcd.embedded.name: unknown key, allowed keys: `}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("fulcrum.yaml", []byte(tc.in))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse = %v (%T), want config.Errors", err, err)
			}
			lines := es.Lines()
			if len(lines) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, lines[i], w)
				}
			}
		})
	}
}

// Without instance.name (the host name, known only at start) the peers
// are checked but not for this instance's entry; CheckEtcdPeers with the
// name then checks it.
func TestCheckEtcdPeersSelf(t *testing.T) {
	t.Parallel()
	peers := []string{"fa=http://fa.example:2380", "fb=http://10.0.0.2:2380"}
	if _, errs := CheckEtcdPeers("--etcd-peers", false, peers, ""); len(errs) != 0 {
		t.Fatalf("without a name: %v", errs)
	}
	got, errs := CheckEtcdPeers("--etcd-peers", false, peers, "fb")
	if len(errs) != 0 {
		t.Fatalf("as fb: %v", errs)
	}
	if want := []EtcdPeer{{"fa", "http://fa.example:2380"}, {"fb", "http://10.0.0.2:2380"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("peers = %v, want %v", got, want)
	}
	_, errs = CheckEtcdPeers("--etcd-peers", false, peers, "fa")
	if len(errs) != 1 || errs[0].Error() != `--etcd-peers: invalid value "fa=http://fa.example:2380", this instance's peer URL must have an IP address (not a wildcard) or localhost as host: the member listens on it` {
		t.Errorf("as fa: %v", errs)
	}
}
