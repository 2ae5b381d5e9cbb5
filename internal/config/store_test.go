package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// store.etcd and instance parse, and their defaults fill what is unset.
func TestParseStoreEtcd(t *testing.T) {
	t.Parallel()
	in := "store:\n  etcd:\n    endpoints: [http://127.0.0.1:2379, https://etcd-b:2379]\n    username: fulcrum\n    password: s3cret\n    tls: {ca: ca.pem, cert: c.pem, key: k.pem}\n" +
		"instance: {name: fulcrum-a, admin_url: 'https://fulcrum-a:7070'}\n"
	f, err := Parse("fulcrum.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := EtcdStore{
		Endpoints: []string{"http://127.0.0.1:2379", "https://etcd-b:2379"}, Prefix: "/fulcrum/",
		DialTimeout: protocol.Duration(5 * time.Second), SessionTTL: protocol.Duration(3 * time.Second),
		Username: "fulcrum", Password: "s3cret", TLS: EtcdTLS{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"},
		CompactEvery: OptionalDuration{Value: protocol.Duration(5 * time.Minute), Set: true},
	}
	if got := f.Store.Etcd.WithDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("store.etcd = %+v, want %+v", got, want)
	}
	if !f.Store.Etcd.Enabled() {
		t.Error("Enabled = false")
	}
	if f.Instance != (Instance{Name: "fulcrum-a", AdminURL: "https://fulcrum-a:7070"}) {
		t.Errorf("instance = %+v", f.Instance)
	}
	if Default().Store.Etcd.Enabled() {
		t.Error("the default store is etcd")
	}
}

// store.etcd.compact_every: absent is the default, 5m; 0 is off, not the
// default; another duration is kept.
func TestParseCompactEvery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		want       time.Duration
	}{
		{"absent", "", 5 * time.Minute},
		{"off", "    compact_every: 0\n", 0},
		{"off as a duration", "    compact_every: 0s\n", 0},
		{"set", "    compact_every: 90s\n", 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("fulcrum.yaml", []byte("store:\n  etcd:\n    endpoints: [http://x:2379]\n"+tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Store.Etcd.WithDefaults().CompactEvery; got.D() != tc.want || !got.Set {
				t.Errorf("compact_every = %+v, want %v", got, tc.want)
			}
		})
	}
}

// Every problem of store.etcd and instance is reported with its line,
// field, value and what is allowed.
func TestParseStoreEtcdBad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"every problem at once",
			"store:\n  etcd:\n" +
				"    endpoints: [127.0.0.1:2379, 'http://ok:2379']\n" + // 3
				"    prefix: fulcrum\n" + // 4
				"    dial_timeout: 10ms\n" + // 5
				"    session_ttl: 1500ms\n" + // 6
				"    username: u\n" + // 7
				"    tls: {cert: c.pem}\n" + // 8
				"instance:\n  name: -bad\n  admin_url: ftp://x\n", // 10, 11
			[]string{
				`fulcrum.yaml:3: store.etcd.endpoints[0]: invalid value "127.0.0.1:2379", must be an etcd client URL, http://host:port or https://host:port`,
				`fulcrum.yaml:4: store.etcd.prefix: invalid value "fulcrum", must start and end with /`,
				`fulcrum.yaml:5: store.etcd.dial_timeout: invalid value "10ms", must be a duration in [100ms, 1m]`,
				`fulcrum.yaml:6: store.etcd.session_ttl: invalid value "1500ms", must be whole seconds in [2s, 1m]`,
				`fulcrum.yaml:7: store.etcd.username: invalid value "u", must be given with store.etcd.password`,
				`fulcrum.yaml:8: store.etcd.tls.cert: invalid value "c.pem", must be given with store.etcd.tls.key`,
				`fulcrum.yaml:10: instance.name: invalid value "-bad", must be 1-63 letters`,
				`fulcrum.yaml:11: instance.admin_url: invalid value "ftp://x", must be an http:// or https:// URL`,
			}},
		{"store.etcd without endpoints",
			"store:\n  etcd:\n    prefix: /x/\n",
			[]string{`fulcrum.yaml:2: store.etcd.endpoints: invalid value "", must list at least one etcd client URL`}},
		{"compact_every below 1s",
			"store:\n  etcd:\n    endpoints: [http://x:2379]\n    compact_every: 500ms\n",
			[]string{`fulcrum.yaml:4: store.etcd.compact_every: invalid value "500ms", must be 0 (off) or a duration in [1s, 24h]`}},
		{"compact_every above 24h",
			"store:\n  etcd:\n    endpoints: [http://x:2379]\n    compact_every: 25h\n",
			[]string{`fulcrum.yaml:4: store.etcd.compact_every: invalid value "25h", must be 0 (off) or a duration in [1s, 24h]`}},
		{"compact_every negative",
			"store:\n  etcd:\n    endpoints: [http://x:2379]\n    compact_every: -1m\n",
			[]string{`fulcrum.yaml:4: store.etcd.compact_every: invalid value "-1m", must not be negative`}},
		{"compact_every not a duration",
			"store:\n  etcd:\n    endpoints: [http://x:2379]\n    compact_every: often\n",
			[]string{`fulcrum.yaml:4: store.etcd.compact_every: invalid value "often", must be a Go duration such as "500ms" or "2s"`}},
		{"unknown key",
			"store:\n  etcd:\n    endpoint: http://x:2379\n",
			[]string{`fulcrum.yaml:3: store.etcd.endpoint: unknown key, allowed keys: `}},
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
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, lines[i], w)
				}
			}
		})
	}
}
