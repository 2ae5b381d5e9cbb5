package etcdstore

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// TestTLSAndAuth: an etcd that requires client certificates and, once
// auth is enabled, a user and password: the store connects with the CA,
// its client pair and the user; a wrong password or no client pair is
// refused at Open, naming etcd.
func TestTLSAndAuth(t *testing.T) {
	ca := certstest.NewCA(t)
	server := ca.Leaf(t, "server", certstest.LeafOptions{})
	client := ca.Leaf(t, "client", certstest.LeafOptions{Client: true})
	c := etcdtest.New(t, etcdtest.Options{TLS: &etcdtest.TLS{
		CA: ca.CertFile, Cert: server.CertFile, Key: server.KeyFile,
		ClientCert: client.CertFile, ClientKey: client.KeyFile,
	}})
	if !strings.HasPrefix(c.Endpoints()[0], "https://") {
		t.Fatalf("endpoint %s, want https", c.Endpoints()[0])
	}
	files := &certs.ClientFiles{CA: ca.CertFile, Cert: client.CertFile, Key: client.KeyFile}
	opts := Options{Endpoints: c.Endpoints(), TLS: files, DialTimeout: 2 * time.Second}

	// Enable auth: a root user, then the store's own.
	admin, err := Open(ctxT(t), opts)
	if err != nil {
		t.Fatalf("Open over TLS: %v", err)
	}
	put(t, admin, "groups/prime", "p")
	cli := admin.Client()
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctxT(t), "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctxT(t), "root", "root"); return err },
		func() error { _, err := cli.UserAdd(ctxT(t), "fulcrum", "secret"); return err },
		func() error { _, err := cli.RoleAdd(ctxT(t), "fulcrum"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctxT(t), "fulcrum", "/fulcrum/", clientv3.GetPrefixRangeEnd("/fulcrum/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserGrantRole(ctxT(t), "fulcrum", "fulcrum"); return err },
		func() error { _, err := cli.AuthEnable(ctxT(t)); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("enabling auth: %v", err)
		}
	}
	admin.Close()

	opts.Username, opts.Password = "fulcrum", "secret"
	s, err := Open(ctxT(t), opts)
	if err != nil {
		t.Fatalf("Open with TLS and a user: %v", err)
	}
	defer s.Close()
	if kv, err := s.Get(ctxT(t), "groups/prime"); err != nil || string(kv.Value) != "p" {
		t.Fatalf("Get with TLS and a user = %+v, %v", kv, err)
	}

	bad := opts
	bad.Password = "wrong"
	if _, err := Open(ctxT(t), bad); err == nil || !strings.Contains(err.Error(), "etcd at "+c.Endpoints()[0]) || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("Open with a wrong password = %v; want an authentication error naming etcd", err)
	}
	noPair := opts
	noPair.TLS = &certs.ClientFiles{CA: ca.CertFile}
	noPair.DialTimeout = 500 * time.Millisecond
	if _, err := Open(ctxT(t), noPair); err == nil || !strings.Contains(err.Error(), "etcd at ") {
		t.Fatalf("Open without a client certificate = %v; want an error naming etcd", err)
	}
}
