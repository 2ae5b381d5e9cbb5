package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/storetest"
)

// shared is the package's one-member etcd, started by TestMain (nil when
// etcd is not installed: the tests then fail with CI=true, skip
// otherwise).
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var prefixes atomic.Int64

// newPrefix is a prefix no other test uses.
func newPrefix(t *testing.T) string {
	return fmt.Sprintf("/test-%d-%s/", prefixes.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
}

// openT opens a store on the shared etcd under prefix (a new one when
// empty) and closes it at cleanup.
func openT(t *testing.T, prefix string) *Store {
	t.Helper()
	etcdtest.Need(t)
	if prefix == "" {
		prefix = newPrefix(t)
	}
	s, err := Open(ctxT(t), Options{Endpoints: shared.Endpoints(), Prefix: prefix, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s store.Store, key, value string) int64 {
	t.Helper()
	_, rev, _, err := s.Txn(ctxT(t), nil, []store.Op{store.Put(key, []byte(value))})
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := Open(ctxT(t), Options{Endpoints: endpoints(t), Prefix: newPrefix(t)})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		},
		// etcd compacts the revisions below the one given; the contract's
		// Compact drops rev itself too.
		Compact: func(t *testing.T, s store.Store, rev int64) {
			if _, err := s.(*Store).Client().Compact(ctxT(t), rev+1); err != nil {
				t.Fatalf("Compact: %v", err)
			}
		},
		SparseRevisions: true,
	})
}

func endpoints(t *testing.T) []string {
	etcdtest.Need(t)
	return shared.Endpoints()
}

// TestPrefixIsolation: two stores on one etcd under different prefixes
// see none of each other's keys or changes, and the store's own keys are
// where the package documents them.
func TestPrefixIsolation(t *testing.T) {
	a, b := openT(t, "/iso-a/"), openT(t, "/iso-a-b/")
	bw, err := b.Watch(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	put(t, a, "groups/prime", "a")
	rb := put(t, b, "groups/prime", "b")
	if kv, err := a.Get(ctxT(t), "groups/prime"); err != nil || string(kv.Value) != "a" {
		t.Fatalf("a's groups/prime = %+v, %v; want a", kv, err)
	}
	kvs, _, err := b.List(ctxT(t), "")
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != "b" {
		t.Fatalf("b's keys = %+v, %v; want its one key", kvs, err)
	}
	select {
	case r := <-bw:
		if r.Rev != rb || len(r.Events) != 1 || string(r.Events[0].KV.Value) != "b" {
			t.Fatalf("b's watch got %+v, want only its own put at %d", r, rb)
		}
	case <-ctxT(t).Done():
		t.Fatal("no watch response")
	}
	if _, _, _, err := a.Txn(ctxT(t), nil, []store.Op{store.DeletePrefix("groups/")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), "groups/prime"); err != nil {
		t.Fatalf("a's delete of its groups/ reached b: %v", err)
	}
	// Where the keys are in etcd.
	raw, err := a.Client().Get(ctxT(t), "/iso-a-b/", clientPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range raw.Kvs {
		got = append(got, string(kv.Key)+"="+string(kv.Value))
	}
	if w := "/iso-a-b/kv/groups/prime=b /iso-a-b/meta/schema=2"; strings.Join(got, " ") != w {
		t.Fatalf("keys in etcd: %q, want %q", strings.Join(got, " "), w)
	}
}

// TestCompactedWatchRelist: after a compaction, a watch from a compacted
// revision fails with ErrCompacted; listing again and watching from the
// list's revision + 1 misses nothing.
func TestCompactedWatchRelist(t *testing.T) {
	s := openT(t, "")
	r1 := put(t, s, "g/a", "1")
	put(t, s, "g/b", "2")
	r3 := put(t, s, "g/a", "3")
	if _, err := s.Client().Compact(ctxT(t), r3); err != nil {
		t.Fatal(err)
	}
	_, err := s.Watch(ctxT(t), "g/", r1+1)
	if !errors.Is(err, store.ErrCompacted) || !strings.Contains(err.Error(), "etcd") {
		t.Fatalf("Watch from %d after compacting at %d = %v; want ErrCompacted naming etcd", r1+1, r3, err)
	}
	kvs, rev, err := s.List(ctxT(t), "g/")
	if err != nil || len(kvs) != 2 || string(kvs[0].Value) != "3" || rev < r3 {
		t.Fatalf("List after the compaction = %+v at %d, %v", kvs, rev, err)
	}
	ch, err := s.Watch(ctxT(t), "g/", rev+1)
	if err != nil {
		t.Fatalf("Watch from the list's revision + 1: %v", err)
	}
	r4 := put(t, s, "g/c", "4")
	select {
	case r := <-ch:
		if r.Err != nil || r.Rev != r4 || len(r.Events) != 1 || r.Events[0].KV.Key != "g/c" {
			t.Fatalf("watch after relisting got %+v, want the put of g/c at %d", r, r4)
		}
	case <-ctxT(t).Done():
		t.Fatal("no watch response")
	}
}

// TestRefusesIncompatibleSchema: Open refuses a prefix written by a newer
// schema, one whose version is not a number, and one holding keys without
// a schema version, naming the key and the reason; and a second Open of a
// prefix it wrote succeeds.
func TestRefusesIncompatibleSchema(t *testing.T) {
	s := openT(t, "")
	cli := s.Client()
	tests := []struct{ name, key, value, want string }{
		{"newer", "meta/schema", "3", "written with schema version 3, newer than this fulcrum knows (2)"},
		{"garbage", "meta/schema", "x", `schema version "x" is not a number`},
		{"older", "meta/schema", "1", "schema version 1, older than any this fulcrum reads (2)"},
		{"no schema", "groups/x", "{}", "holds 1 keys but no schema version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := newPrefix(t)
			if _, err := cli.Put(ctxT(t), prefix+tt.key, tt.value); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctxT(t), Options{Endpoints: endpoints(t), Prefix: prefix})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "etcd at "+shared.Endpoints()[0]) {
				t.Fatalf("Open = %v; want an error naming etcd and saying %q", err, tt.want)
			}
		})
	}
	again := openT(t, s.Prefix())
	if _, _, err := again.List(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaVersionMatchesBolt: the two stores number one layout of keys.
func TestSchemaVersionMatchesBolt(t *testing.T) {
	if SchemaVersion != boltstore.SchemaVersion {
		t.Fatalf("etcdstore.SchemaVersion %d, boltstore.SchemaVersion %d: they number the same layout of keys", SchemaVersion, boltstore.SchemaVersion)
	}
}

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	ep := []string{"http://127.0.0.1:1"}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no endpoints", Options{}, "etcdstore: endpoints: none given"},
		{"bad endpoint", Options{Endpoints: []string{"127.0.0.1:2379"}}, `etcdstore: endpoint "127.0.0.1:2379": want http://host:port or https://host:port`},
		{"prefix", Options{Endpoints: ep, Prefix: "fulcrum"}, `etcdstore: prefix "fulcrum": must start and end with /`},
		{"dial timeout", Options{Endpoints: ep, DialTimeout: time.Millisecond}, "etcdstore: dial_timeout 1ms: must be at least 100ms"},
		{"password alone", Options{Endpoints: ep, Password: "x"}, "etcdstore: username and password must be given together"},
		{"tls", Options{Endpoints: ep, TLS: &tlsFiles{CA: "/nonexistent/ca.pem"}}, `etcdstore: tls: certs: ca "/nonexistent/ca.pem"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Open(context.Background(), tt.o)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Open = %v, want %q", err, tt.want)
			}
		})
	}
}
