package cli

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestEtcdStoreOptions(t *testing.T) {
	t.Parallel()
	got := etcdStoreOptions(config.EtcdStore{Endpoints: []string{"http://h:1"}})
	want := etcdstore.Options{Endpoints: []string{"http://h:1"}, Prefix: "/fulcrum/", DialTimeout: 5 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	got = etcdStoreOptions(config.EtcdStore{Endpoints: []string{"https://h:1"}, Prefix: "/p/", DialTimeout: protocol.Duration(time.Second),
		Username: "u", Password: "p", TLS: config.EtcdTLS{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}})
	want = etcdstore.Options{Endpoints: []string{"https://h:1"}, Prefix: "/p/", DialTimeout: time.Second, Username: "u", Password: "p",
		TLS: &certs.ClientFiles{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("set: %+v, want %+v", got, want)
	}
}

// bboltWithGroup makes a data dir holding one group.
func bboltWithGroup(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	st, err := boltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := groupstore.New(st).PutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolHTTP, FrontDoor: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exitOf(t *testing.T, err error) (int, string) {
	t.Helper()
	var ee *exitError
	if !errors.As(err, &ee) {
		t.Fatalf("runMigrate = %v, want an exit error", err)
	}
	return ee.code, ee.Error()
}

// TestMigrateEtcdUnreachable: exit 1 within the dial timeout, naming the
// endpoint.
func TestMigrateEtcdUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := config.Default()
	cfg.DataDir = bboltWithGroup(t)
	cfg.Store.Etcd = config.EtcdStore{Endpoints: []string{ep}, DialTimeout: protocol.Duration(500 * time.Millisecond)}
	start := time.Now()
	code, msg := exitOf(t, runMigrate(context.Background(), "f.yaml", cfg, migrateFlags{}, io.Discard))
	if code != 1 || !strings.Contains(msg, "etcd at "+ep) {
		t.Errorf("exit %d: %s; want 1 naming etcd at %s", code, msg, ep)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with a dial timeout of 500ms", d)
	}
}

// TestMigrateRefusesOtherSchema: a prefix of another schema version is
// refused (exit 2), even with --force, and nothing is written.
func TestMigrateRefusesOtherSchema(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.New(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := etcdstore.Options{Endpoints: etcd.Endpoints(), Prefix: "/old/"}
	st, err := etcdstore.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Client().Put(ctx, "/old/meta/schema", "3"); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = bboltWithGroup(t)
	cfg.Store.Etcd = config.EtcdStore{Endpoints: etcd.Endpoints(), Prefix: "/old/"}
	var out strings.Builder
	code, msg := exitOf(t, runMigrate(ctx, "f.yaml", cfg, migrateFlags{force: true}, &out))
	if code != 2 || !strings.Contains(msg, "etcd prefix /old/ at "+etcd.Endpoints()[0]+" is of schema version 3, the data dir of 2") {
		t.Errorf("exit %d: %s; want 2 and the schema versions", code, msg)
	}
	if !strings.Contains(out.String(), "groups") {
		t.Errorf("the plan was not printed:\n%s", out.String())
	}
	c, err := etcdstore.Inspect(ctx, opts)
	if err != nil || len(c.KVs) != 0 || c.Schema != 3 {
		t.Errorf("etcd after the refusal: %+v, %v; want no keys, schema 3 as it was", c, err)
	}
}
